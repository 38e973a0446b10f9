//! `${VAR}` and `${VAR:-default}` in configuration strings, as Claude Code expands them in
//! `.mcp.json`: in `command`, `args`, `env` values, `url` and `headers` values, in every file
//! (the gateway file too, which is read by the same loader).
//!
//! The rules, written down in `docs/configuration.md`:
//! - `${NAME}` is the value of `NAME`; unset, it is an error naming the variable.
//! - `${NAME:-default}` is the value of `NAME`, or `default` when `NAME` is unset or empty (the
//!   shell's rule for `:-`). The default is taken as written: it cannot hold `${`.
//! - `NAME` is a portable variable name: a letter or `_`, then letters, digits and `_`.
//! - `$$` before `{` writes a literal `${`; every other `$` is itself (`$HOME` and `$$` stay as
//!   written, as in Claude Code, which expands only the two forms above).
//! - A `${` that is not one of the two forms (no closing `}`, an empty or invalid name, another
//!   operator) is an error, never passed through: a typo must not become a literal argument.
//!
//! Errors name the variable and the position, never the text around it, which may be a
//! secret written in the file.

use std::fmt;

use super::secret::Env;

/// A string after expansion: its text, the variables it referred to (once each, in order) and
/// whether any part of the text came from the environment.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Expanded {
    pub(crate) text: String,
    pub(crate) reads: Vec<String>,
    pub(crate) from_env: bool,
}

// The text may be a secret taken from the environment.
impl fmt::Debug for Expanded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Expanded")
            .field("text", &"[redacted]")
            .field("reads", &self.reads)
            .field("from_env", &self.from_env)
            .finish()
    }
}

/// Why a string could not be expanded. The message names a variable or a position, never a
/// value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ExpandError {
    /// `${NAME}` with `NAME` unset and no default.
    Unset { var: String },
    /// A `${` that is not `${NAME}` or `${NAME:-default}`; `at` is its position in characters,
    /// from 1.
    Malformed { at: usize, why: &'static str },
}

impl fmt::Display for ExpandError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unset { var } => write!(
                f,
                "environment variable `{var}` is not set (write `${{{var}:-default}}` for a default)"
            ),
            Self::Malformed { at, why } => write!(
                f,
                "malformed `${{` at character {at}: {why}; write `${{NAME}}` or \
                 `${{NAME:-default}}`, or `$${{` for a literal `${{`"
            ),
        }
    }
}

/// Whether `name` is a variable name `${…}` may hold.
pub(crate) fn is_var_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// `text` with its `${NAME}` and `${NAME:-default}` read from `env`, by the rules above, for
/// a setting read outside the server entries (the gateway file's `auth.introspection`
/// secret). The error names the variable or the position, never the text, which may be a
/// secret.
pub fn expand_variables(text: &str, env: &Env) -> Result<String, String> {
    expand(text, Some(env))
        .map(|e| e.text)
        .map_err(|e| e.to_string())
}

/// `text` with its references replaced from `env`. With no environment (an edit only checks
/// the shape of an entry) an unset variable is not an error: it reads as its default, or as
/// empty.
pub(crate) fn expand(text: &str, env: Option<&Env>) -> Result<Expanded, ExpandError> {
    let mut out = Expanded {
        text: String::with_capacity(text.len()),
        reads: Vec::new(),
        from_env: false,
    };
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c != '$' {
            out.text.push(c);
            i += 1;
            continue;
        }
        match (chars.get(i + 1), chars.get(i + 2)) {
            (Some('$'), Some('{')) => {
                out.text.push_str("${");
                i += 3;
                continue;
            }
            (Some('{'), _) => {}
            _ => {
                out.text.push('$');
                i += 1;
                continue;
            }
        }
        let at = i + 1;
        let start = i + 2;
        let Some(len) = chars[start..].iter().position(|&c| c == '}') else {
            return Err(ExpandError::Malformed {
                at,
                why: "it has no closing `}`",
            });
        };
        let inner: String = chars[start..start + len].iter().collect();
        i = start + len + 1;
        let (name, default) = match inner.split_once(":-") {
            Some((name, default)) => (name, Some(default)),
            None => (inner.as_str(), None),
        };
        if name.is_empty() {
            return Err(ExpandError::Malformed {
                at,
                why: "it names no variable",
            });
        }
        if !is_var_name(name) {
            return Err(ExpandError::Malformed {
                at,
                why: "not a variable name (letters, digits and `_`, not starting with a digit), \
                      nor `:-` before a default",
            });
        }
        if default.is_some_and(|d| d.contains("${")) {
            return Err(ExpandError::Malformed {
                at,
                why: "a default cannot hold another `${`",
            });
        }
        if !out.reads.iter().any(|r| r == name) {
            out.reads.push(name.to_owned());
        }
        let value = env.and_then(|env| env.var(name));
        match (value, default) {
            (Some(v), Some(_)) if !v.is_empty() => {
                out.text.push_str(v);
                out.from_env = true;
            }
            (Some(v), None) => {
                out.text.push_str(v);
                out.from_env |= !v.is_empty();
            }
            (_, Some(d)) => out.text.push_str(d),
            (None, None) if env.is_none() => {}
            (None, None) => {
                return Err(ExpandError::Unset {
                    var: name.to_owned(),
                });
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::{ExpandError, expand};
    use crate::config::Env;

    fn env() -> Env {
        Env::new()
            .with("TOKEN", "tok-123")
            .with("EMPTY", "")
            .with("DIR", "/data")
    }

    fn ok(text: &str) -> String {
        expand(text, Some(&env())).unwrap().text
    }

    fn err(text: &str) -> String {
        expand(text, Some(&env())).unwrap_err().to_string()
    }

    #[test]
    fn the_two_forms_expand_and_everything_else_stays_as_written() {
        assert_eq!(ok("Bearer ${TOKEN}"), "Bearer tok-123");
        assert_eq!(ok("${DIR}/mem.jsonl"), "/data/mem.jsonl");
        assert_eq!(ok("${NOPE:-fallback}"), "fallback");
        assert_eq!(ok("${EMPTY:-fallback}"), "fallback");
        assert_eq!(ok("${TOKEN:-fallback}"), "tok-123");
        assert_eq!(ok("${NOPE:-}"), "");
        assert_eq!(ok("${EMPTY}"), "");
        assert_eq!(ok("${DIR}${DIR}"), "/data/data");
        // Claude Code expands only `${…}`: a bare `$NAME` and `$$` are text.
        assert_eq!(ok("$DIR and $$ and $"), "$DIR and $$ and $");
        // `$${` is the way to write a literal `${`.
        assert_eq!(ok("$${DIR} costs $${"), "${DIR} costs ${");
        assert_eq!(ok("a:-b }"), "a:-b }");
    }

    #[test]
    fn the_variables_read_are_listed_once_each_in_order() {
        let e = expand("${DIR}/${NOPE:-x}/${DIR}", Some(&env())).unwrap();
        assert_eq!(e.reads, ["DIR", "NOPE"]);
        assert!(e.from_env);
        let e = expand("${NOPE:-x} $${TOKEN}", Some(&env())).unwrap();
        assert_eq!(e.reads, ["NOPE"]);
        assert!(
            !e.from_env,
            "a default is the file's, not the environment's"
        );
    }

    #[test]
    fn an_unset_variable_without_default_is_an_error_naming_it() {
        assert_eq!(
            expand("x ${MISSING} y", Some(&env())),
            Err(ExpandError::Unset {
                var: "MISSING".to_owned()
            })
        );
        assert!(err("${MISSING}").contains("`MISSING` is not set"));
        // Checking an entry's shape only: no environment, no error.
        assert_eq!(expand("a${MISSING}b", None).unwrap().text, "ab");
    }

    #[test]
    fn a_malformed_reference_is_an_error_with_its_position_and_no_text() {
        let cases = [
            ("secret-abc ${TOKEN", 12, "no closing"),
            ("${}", 1, "names no variable"),
            ("${1X}", 1, "not a variable name"),
            ("${A-b}", 1, "not a variable name"),
            ("${A:b}", 1, "not a variable name"),
            ("${secret value}", 1, "not a variable name"),
            ("${A:-${B}}", 1, "another `${`"),
        ];
        for (text, at, why) in cases {
            let e = err(text);
            assert!(e.contains(&format!("character {at}:")), "{text}: {e}");
            assert!(e.contains(why), "{text}: {e}");
            assert!(!e.contains("secret"), "{text}: {e}");
        }
    }
}
