//! Log records for the end-to-end tests: proto's shared builders (`proto::test_records`,
//! which this crate's dev-dependency on proto's `test-support` feature turns on), so an
//! end-to-end test and a unit test make a record the same way and a change to a record's
//! fields is made once. A record's line for a log file is `Record::to_line`.

pub use proto::test_records::*;
