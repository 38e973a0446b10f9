//! Secrets as types: what they print is `[redacted]`, whatever formats them. The value comes
//! out only through `secret()`, which says at the call site that a secret is being used.

use std::fmt;

macro_rules! secret {
    ($(#[$meta:meta])* $name:ident) => {
        $(#[$meta])*
        #[derive(Clone, PartialEq, Eq)]
        pub struct $name(String);

        impl $name {
            /// Wraps a secret value.
            pub fn new(value: impl Into<String>) -> Self {
                Self(value.into())
            }

            /// The value. Every call is a place where a secret leaves its type: it must go
            /// only where it belongs (a request, the token store), never to a log or an error.
            pub fn secret(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, concat!(stringify!($name), "([redacted])"))
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("[redacted]")
            }
        }
    };
}

secret! {
    /// An OAuth access token, sent as `Authorization: Bearer` (or `DPoP` when bound to a key).
    AccessToken
}
secret! {
    /// An OAuth refresh token.
    RefreshToken
}
secret! {
    /// A client secret, pre-registered or from dynamic registration.
    ClientSecret
}
secret! {
    /// A PKCE code verifier: kept until the code is exchanged, never sent before.
    PkceVerifier
}
secret! {
    /// An authorization code from the redirect.
    AuthorizationCode
}
secret! {
    /// A signed RFC 7523 client assertion (a compact JWT): a credential while it is valid.
    JwtAssertion
}
secret! {
    /// An RFC 8628 device code: whoever holds it while the person approves gets the tokens,
    /// so it goes to the token endpoint only, never to the screen (the user code does).
    DeviceCode
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_never_print() {
        let token = AccessToken::new("eyJ-very-secret");
        assert_eq!(format!("{token:?}"), "AccessToken([redacted])");
        assert_eq!(token.to_string(), "[redacted]");
        assert_eq!(
            format!("{:?}", Some(ClientSecret::new("s3"))),
            "Some(ClientSecret([redacted]))"
        );
        assert_eq!(token.secret(), "eyJ-very-secret");
    }
}
