//! loopd's entry point; everything it does lives in the library, and the start-up both
//! daemons share in `plumbing::daemon`.

use std::process::ExitCode;

fn main() -> ExitCode {
    plumbing::daemon::main("loopd", loopd::main_with)
}
