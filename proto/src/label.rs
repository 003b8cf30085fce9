//! Data classes and labels: how sensitive a piece of text is, and whether it came from
//! somewhere an attacker could have written it.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// How sensitive data is. The order is meaningful: `Public < Private < Secret`, and a
/// join takes the larger, so mixing data can only raise its class.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum DataClass {
    #[default]
    Public,
    Private,
    Secret,
}

impl DataClass {
    pub const ALL: [DataClass; 3] = [DataClass::Public, DataClass::Private, DataClass::Secret];

    pub fn as_str(self) -> &'static str {
        match self {
            DataClass::Public => "public",
            DataClass::Private => "private",
            DataClass::Secret => "secret",
        }
    }
}

impl fmt::Display for DataClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The error for a class name that is not one of `public`, `private`, `secret`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownClass(pub String);

impl fmt::Display for UnknownClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown data class {:?} (expected public, private or secret)",
            self.0
        )
    }
}

impl std::error::Error for UnknownClass {}

impl FromStr for DataClass {
    type Err = UnknownClass;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        DataClass::ALL
            .into_iter()
            .find(|c| c.as_str() == s)
            .ok_or_else(|| UnknownClass(s.to_string()))
    }
}

/// A class plus the taint flag. Labels only ever rise: `join` is the least upper bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct Label {
    pub class: DataClass,
    pub untrusted: bool,
}

impl Label {
    pub const PUBLIC: Label = Label {
        class: DataClass::Public,
        untrusted: false,
    };

    pub fn new(class: DataClass, untrusted: bool) -> Label {
        Label { class, untrusted }
    }

    /// The larger class and the OR of the taint flags.
    #[must_use]
    pub fn join(self, other: Label) -> Label {
        Label {
            class: self.class.max(other.class),
            untrusted: self.untrusted || other.untrusted,
        }
    }
}

impl fmt::Display for Label {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.untrusted {
            write!(f, "{}, untrusted", self.class)
        } else {
            write!(f, "{}", self.class)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_are_ordered_public_private_secret() {
        assert!(DataClass::Public < DataClass::Private);
        assert!(DataClass::Private < DataClass::Secret);
    }

    #[test]
    fn join_takes_the_larger_class_and_ors_the_taint() {
        let a = Label::new(DataClass::Secret, false);
        let b = Label::new(DataClass::Public, true);
        assert_eq!(a.join(b), Label::new(DataClass::Secret, true));
        assert_eq!(b.join(a), a.join(b));
        assert_eq!(Label::PUBLIC.join(Label::PUBLIC), Label::PUBLIC);
    }

    #[test]
    fn class_names_round_trip() {
        for c in DataClass::ALL {
            assert_eq!(c.as_str().parse::<DataClass>(), Ok(c));
        }
        assert!("Secret".parse::<DataClass>().is_err());
    }
}
