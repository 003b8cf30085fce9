//! memoryd's entry point; everything it does lives in the library.

use std::process::ExitCode;

fn main() -> ExitCode {
    plumbing::log::init("memoryd");
    // The encoder chooses its own threads (docs/memoryd.md, "The embedder's speed"); candle,
    // which loads the model, would spread any work it does over every core through rayon.
    // One rayon thread keeps it from taking the whole of a small server.
    if std::env::var_os("RAYON_NUM_THREADS").is_none() {
        std::env::set_var("RAYON_NUM_THREADS", "1");
    }
    match memoryd::main_with(std::env::args().skip(1)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            plumbing::error!("{e}");
            ExitCode::FAILURE
        }
    }
}
