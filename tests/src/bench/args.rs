//! A small `--name value` flag parser: the bench takes few flags, each with a default.

use std::collections::BTreeMap;

/// Flags given on the command line, consumed by the mode that reads them; a flag no
/// mode asked for is an error (a typo must not silently run the default).
#[derive(Debug, Default)]
pub struct Flags {
    /// Values by flag name (without `--`), in the order given.
    values: BTreeMap<String, Vec<String>>,
}

impl Flags {
    /// Parses `--name value` pairs.
    pub fn parse(args: &[String]) -> Result<Flags, String> {
        let mut flags = Flags::default();
        let mut it = args.iter();
        while let Some(arg) = it.next() {
            let Some(name) = arg.strip_prefix("--") else {
                return Err(format!("unexpected argument {arg}"));
            };
            let (name, value) = match name.split_once('=') {
                Some((n, v)) => (n.to_string(), v.to_string()),
                None => match it.next() {
                    Some(v) => (name.to_string(), v.clone()),
                    None => return Err(format!("--{name} needs a value")),
                },
            };
            flags.values.entry(name).or_default().push(value);
        }
        Ok(flags)
    }

    /// Takes a numeric flag, or `default` when absent.
    pub fn num<T: std::str::FromStr>(&mut self, name: &str, default: T) -> Result<T, String> {
        match self.values.remove(name).and_then(|mut v| v.pop()) {
            None => Ok(default),
            Some(v) => v
                .parse()
                .map_err(|_| format!("--{name}: {v} is not a number")),
        }
    }

    /// Takes an optional numeric flag.
    pub fn opt<T: std::str::FromStr>(&mut self, name: &str) -> Result<Option<T>, String> {
        match self.values.remove(name).and_then(|mut v| v.pop()) {
            None => Ok(None),
            Some(v) => v
                .parse()
                .map(Some)
                .map_err(|_| format!("--{name}: {v} is not a number")),
        }
    }

    /// Takes a comma-separated list of numbers, or `default` when absent.
    pub fn list(&mut self, name: &str, default: &[u64]) -> Result<Vec<u64>, String> {
        match self.values.remove(name).and_then(|mut v| v.pop()) {
            None => Ok(default.to_vec()),
            Some(v) => v
                .split(',')
                .map(|s| {
                    s.trim()
                        .parse()
                        .map_err(|_| format!("--{name}: {s} is not a number"))
                })
                .collect(),
        }
    }

    /// Takes every value of a repeatable flag.
    pub fn all(&mut self, name: &str) -> Vec<String> {
        self.values.remove(name).unwrap_or_default()
    }

    /// Fails when a flag was given that nothing took.
    pub fn done(self) -> Result<(), String> {
        match self.values.keys().next() {
            None => Ok(()),
            Some(name) => Err(format!("unknown flag --{name}\n{}", super::USAGE)),
        }
    }
}
