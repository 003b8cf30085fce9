//! memoryd's entry point; everything it does lives in the library.

use std::process::ExitCode;

fn main() -> ExitCode {
    plumbing::log::init("memoryd");
    match memoryd::main_with(std::env::args().skip(1)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            plumbing::error!("{e}");
            ExitCode::FAILURE
        }
    }
}
