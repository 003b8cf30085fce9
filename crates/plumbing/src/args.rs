//! The one command-line shape both daemons share: `[--config PATH] [ARGS…]`.

use std::fmt;
use std::io::{self, Write};
use std::path::PathBuf;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Args {
    pub config: PathBuf,
    /// What followed the options: a subcommand and its words, or nothing.
    pub rest: Vec<String>,
    /// `--help` (or `-h`) was among the options: print the usage, run nothing.
    pub help: bool,
}

/// Why the words before a daemon's own arguments are not `[--config PATH]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArgsError {
    /// `--config` was the last word.
    ConfigWithoutPath,
    /// An option other than `--config` before the daemon's own words.
    UnknownOption(String),
}

impl fmt::Display for ArgsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ArgsError::ConfigWithoutPath => f.write_str("--config needs a path"),
            ArgsError::UnknownOption(arg) => write!(f, "unknown option {arg}"),
        }
    }
}

impl std::error::Error for ArgsError {}

/// Parses `argv` (without the program name). `--config=PATH` and `--config PATH` both
/// work; `--` ends the options so a query may start with a dash.
pub fn parse(
    argv: impl IntoIterator<Item = String>,
    default_config: &str,
) -> Result<Args, ArgsError> {
    let mut config = PathBuf::from(default_config);
    let mut rest = Vec::new();
    let mut help = false;
    let mut it = argv.into_iter();
    while let Some(arg) = it.next() {
        if let Some(path) = arg.strip_prefix("--config=") {
            config = PathBuf::from(path);
        } else if arg == "--config" {
            config = PathBuf::from(it.next().ok_or(ArgsError::ConfigWithoutPath)?);
        } else if (arg == "--help" || arg == "-h") && rest.is_empty() {
            help = true;
        } else if arg == "--" {
            rest.extend(it.by_ref());
        } else if arg.starts_with("--") && rest.is_empty() {
            return Err(ArgsError::UnknownOption(arg));
        } else {
            rest.push(arg);
        }
    }
    Ok(Args { config, rest, help })
}

/// Answers `--help`: `usage` on stdout, the same line a usage error starts with. A reader
/// that went away (`| head`) had all it wanted; that is not an error.
pub fn print_usage(usage: &str) -> io::Result<()> {
    match writeln!(io::stdout().lock(), "{usage}") {
        Err(e) if e.kind() != io::ErrorKind::BrokenPipe => Err(e),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(v: &[&str]) -> Result<Args, ArgsError> {
        parse(v.iter().map(|s| s.to_string()), "/d.toml")
    }

    #[test]
    fn config_and_rest() {
        assert_eq!(p(&[]).unwrap().config, PathBuf::from("/d.toml"));
        let a = p(&["--config", "/x", "recall", "tea", "--x"]).unwrap();
        assert_eq!(a.config, PathBuf::from("/x"));
        assert_eq!(a.rest, vec!["recall", "tea", "--x"]);
        assert_eq!(p(&["--config=/y"]).unwrap().config, PathBuf::from("/y"));
        assert_eq!(p(&["--config"]), Err(ArgsError::ConfigWithoutPath));
        assert_eq!(
            p(&["--verbose"]).map_err(|e| e.to_string()),
            Err("unknown option --verbose".to_string())
        );
    }

    // Regression: `--help` was an unknown option, so `loopd --help` printed a usage
    // error and exited 1.
    #[test]
    fn help_before_the_daemons_own_words_asks_for_the_usage() {
        assert!(!p(&[]).unwrap().help);
        for argv in [&["--help"][..], &["-h"], &["--config", "/x", "--help"]] {
            let a = p(argv).unwrap();
            assert!(a.help, "{argv:?}");
            assert!(a.rest.is_empty(), "{argv:?}");
        }
        // After a subcommand it is one of its words: `memoryd recall --help` asks about
        // "--help".
        let a = p(&["recall", "--help"]).unwrap();
        assert!(!a.help);
        assert_eq!(a.rest, vec!["recall", "--help"]);
    }
}
