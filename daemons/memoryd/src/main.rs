//! memoryd's entry point; everything it does lives in the library.

use std::process::ExitCode;

fn main() -> ExitCode {
    plumbing::log::init("memoryd");
    // candle spreads its matrix products over every core through rayon. One core each for
    // the embedding worker and for a recall's query embedding keeps a backfill from
    // taking the whole of a small server, and the query from queueing behind it.
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
