//! `WWW-Authenticate` challenges (RFC 9110 §11.6.1, RFC 6750 §3): several challenges in one
//! header, parameters with token or quoted-string values, token68. Malformed input yields
//! what could be read, never a panic.

/// One challenge: a scheme with its parameters.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Challenge {
    /// The scheme as sent (`Bearer`); compare case-insensitively.
    pub scheme: String,
    /// Parameters, names lower-cased, values unquoted and unescaped.
    pub params: Vec<(String, String)>,
    /// A token68 credential instead of parameters (rare for `Bearer`).
    pub token68: Option<String>,
}

impl Challenge {
    /// The value of a parameter, by case-insensitive name.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// What a `Bearer` challenge tells an MCP client.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct BearerChallenge {
    /// RFC 9728: where the protected resource metadata is.
    pub resource_metadata: Option<String>,
    /// The scopes the request needs, space-separated.
    pub scope: Option<String>,
    /// `invalid_token`, `insufficient_scope`, ...
    pub error: Option<String>,
    /// A description for people (untrusted text).
    pub error_description: Option<String>,
    /// Whether a `DPoP` challenge was among those sent: the resource takes DPoP-bound tokens
    /// (RFC 9449 §7.1). A resource that challenges with `Bearer` alone may refuse them.
    pub dpop_offered: bool,
}

impl BearerChallenge {
    /// The first `Bearer` challenge among all the `WWW-Authenticate` values given, else the
    /// first `DPoP` one: a resource that takes only DPoP-bound tokens challenges with that
    /// scheme, whose parameters are the same (RFC 9449 §7.1, RFC 9728 §5.1).
    pub fn find<'a>(headers: impl IntoIterator<Item = &'a str>) -> Option<Self> {
        let all: Vec<Challenge> = headers.into_iter().flat_map(parse).collect();
        let scheme = |name: &'static str| move |c: &&Challenge| c.scheme.eq_ignore_ascii_case(name);
        all.iter()
            .find(scheme("bearer"))
            .or_else(|| all.iter().find(scheme("dpop")))
            .map(|c| Self {
                resource_metadata: c.param("resource_metadata").map(str::to_owned),
                scope: c.param("scope").map(str::to_owned),
                error: c.param("error").map(str::to_owned),
                error_description: c.param("error_description").map(str::to_owned),
                dpop_offered: all.iter().any(|c| c.scheme.eq_ignore_ascii_case("dpop")),
            })
    }

    /// Whether the server asks for more scope (403 step-up).
    pub fn is_insufficient_scope(&self) -> bool {
        self.error.as_deref() == Some("insufficient_scope")
    }
}

fn is_tchar(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)
}

struct Lexer<'a> {
    s: &'a str,
    i: usize,
}

impl Lexer<'_> {
    fn peek(&self) -> Option<char> {
        self.s[self.i..].chars().next()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.i += c.len_utf8();
        Some(c)
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(' ' | '\t')) {
            self.i += 1;
        }
    }

    fn token(&mut self) -> Option<String> {
        let start = self.i;
        while self.peek().is_some_and(is_tchar) {
            self.i += 1;
        }
        (self.i > start).then(|| self.s[start..self.i].to_owned())
    }

    /// A quoted string, the opening quote already seen at the cursor.
    fn quoted(&mut self) -> String {
        self.bump();
        let mut out = String::new();
        while let Some(c) = self.bump() {
            match c {
                '"' => break,
                '\\' => {
                    if let Some(escaped) = self.bump() {
                        out.push(escaped);
                    }
                }
                c => out.push(c),
            }
        }
        out
    }

    fn value(&mut self) -> String {
        self.skip_ws();
        if self.peek() == Some('"') {
            self.quoted()
        } else {
            let start = self.i;
            while self
                .peek()
                .is_some_and(|c| c != ',' && c != ' ' && c != '\t')
            {
                self.bump();
            }
            self.s[start..self.i].to_owned()
        }
    }
}

/// Parses one `WWW-Authenticate` header value into its challenges.
pub fn parse(header: &str) -> Vec<Challenge> {
    let mut lx = Lexer { s: header, i: 0 };
    let mut out: Vec<Challenge> = Vec::new();
    loop {
        while matches!(lx.peek(), Some(' ' | '\t' | ',')) {
            lx.bump();
        }
        if lx.peek().is_none() {
            break;
        }
        let Some(word) = lx.token() else {
            // Not a token: skip the character and go on.
            lx.bump();
            continue;
        };
        let after_word = lx.i;
        lx.skip_ws();
        if lx.peek() == Some('=') && !out.is_empty() {
            // name=value of the current challenge.
            lx.bump();
            let value = lx.value();
            if let Some(current) = out.last_mut() {
                current.params.push((word.to_ascii_lowercase(), value));
            }
            continue;
        }
        // A new challenge: the word is its scheme; a first parameter or token68 may follow.
        let mut challenge = Challenge {
            scheme: word,
            ..Challenge::default()
        };
        if lx.i > after_word && !matches!(lx.peek(), None | Some(',')) {
            let start = lx.i;
            if let Some(name) = lx.token() {
                lx.skip_ws();
                let rest = &lx.s[lx.i..];
                let equals = rest.len() - rest.trim_start_matches('=').len();
                let after = rest.trim_start_matches('=').trim_start();
                if equals == 1 && !after.is_empty() && !after.starts_with(',') {
                    lx.bump();
                    let value = lx.value();
                    challenge.params.push((name.to_ascii_lowercase(), value));
                } else {
                    // token68, with its `=` padding.
                    while lx.peek() == Some('=') {
                        lx.bump();
                    }
                    challenge.token68 = Some(lx.s[start..lx.i].trim().to_owned());
                }
            }
        }
        out.push(challenge);
    }
    out
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn a_bearer_challenge_with_resource_metadata_and_scope() {
        let h = r#"Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource", scope="files:read files:write""#;
        let b = BearerChallenge::find([h]).unwrap();
        assert_eq!(
            b.resource_metadata.as_deref(),
            Some("https://mcp.example.com/.well-known/oauth-protected-resource")
        );
        assert_eq!(b.scope.as_deref(), Some("files:read files:write"));
    }

    #[test]
    fn several_challenges_in_one_header() {
        let h = r#"Basic realm="old", Bearer error="insufficient_scope", scope="admin", error_description="needs \"admin\"""#;
        let all = parse(h);
        assert_eq!(all.len(), 2);
        assert_eq!(all[0].scheme, "Basic");
        assert_eq!(all[0].param("realm"), Some("old"));
        let b = BearerChallenge::find([h]).unwrap();
        assert!(b.is_insufficient_scope());
        assert_eq!(b.scope.as_deref(), Some("admin"));
        assert_eq!(b.error_description.as_deref(), Some(r#"needs "admin""#));
    }

    #[test]
    fn token_values_case_and_token68() {
        let all = parse("bearer Error=invalid_token, Realm=mcp, Negotiate YII1CAYGKw==");
        assert_eq!(all[0].param("error"), Some("invalid_token"));
        assert_eq!(all[0].param("realm"), Some("mcp"));
        assert_eq!(all[1].scheme, "Negotiate");
        assert_eq!(all[1].token68.as_deref(), Some("YII1CAYGKw=="));
        assert!(
            BearerChallenge::find(["Bearer"]).is_some(),
            "a bare scheme is a challenge"
        );
        assert_eq!(BearerChallenge::find(["Basic realm=x"]), None);
    }

    #[test]
    fn a_dpop_challenge_stands_in_for_a_missing_bearer_one() {
        let dpop = r#"DPoP algs="ES256", resource_metadata="https://mcp.example.com/prm""#;
        let b = BearerChallenge::find([dpop]).unwrap();
        assert_eq!(
            b.resource_metadata.as_deref(),
            Some("https://mcp.example.com/prm")
        );
        let both = format!(r#"{dpop}, Bearer scope="a""#);
        let b = BearerChallenge::find([both.as_str()]).unwrap();
        assert_eq!(
            (b.scope.as_deref(), b.resource_metadata),
            (Some("a"), None),
            "Bearer first"
        );
    }

    proptest! {
        #[test]
        fn never_panics(header in ".{0,80}") {
            let _ = parse(&header);
            let _ = BearerChallenge::find([header.as_str()]);
        }

        #[test]
        fn quoted_values_come_back(value in "[ -~]{0,30}") {
            let quoted = value.replace('\\', "\\\\").replace('"', "\\\"");
            let header = format!("Bearer scope=\"{quoted}\", error=x");
            let b = BearerChallenge::find([header.as_str()]).unwrap();
            prop_assert_eq!(b.scope.as_deref(), Some(value.as_str()));
            prop_assert_eq!(b.error.as_deref(), Some("x"));
        }
    }
}
