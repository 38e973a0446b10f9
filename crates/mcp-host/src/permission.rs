//! Permission hooks (seed 000 §8): before any tool call leaves the host, a policy decides
//! whether it may; a person is asked when the policy says so. A call that is not allowed never
//! reaches the server: it comes back to the caller as a tool error, like any other failure a
//! model should read.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;

use mcp_protocol::JsonObject;

/// What a policy says about one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Decision {
    /// Send it.
    Allow,
    /// Refuse it.
    Deny,
    /// Ask a person (the host's [`Prompter`]); refuse if there is no one to ask. The default
    /// for MCP tools.
    #[default]
    Ask,
}

impl Decision {
    /// Reads `allow`, `deny` or `ask` (the configuration's spelling).
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "allow" => Some(Self::Allow),
            "deny" => Some(Self::Deny),
            "ask" => Some(Self::Ask),
            _ => None,
        }
    }

    /// The configuration's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Allow => "allow",
            Self::Deny => "deny",
            Self::Ask => "ask",
        }
    }
}

/// One call about to be made, as a policy and a person see it. The arguments are the model's
/// and the tool metadata is the server's: neither is trusted.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct CallRequest<'a> {
    /// The server's id.
    pub server: &'a str,
    /// The tool's name as the server lists it.
    pub tool: &'a str,
    /// The arguments that would be sent.
    pub arguments: &'a JsonObject,
}

/// Decides about every tool call. Consulted before the call; the server never sees a call the
/// policy refused.
pub trait Policy: Send + Sync + 'static {
    /// The decision for `call`.
    fn decide(&self, call: &CallRequest<'_>) -> Decision;
}

/// Asks a person whether a call may go ahead, showing the server, the tool and the arguments.
pub trait Prompter: Send + Sync + 'static {
    /// Resolves to `true` if the person allows the call.
    fn confirm<'a>(
        &'a self,
        call: &'a CallRequest<'a>,
    ) -> Pin<Box<dyn Future<Output = bool> + Send + 'a>>;
}

/// One server's rules.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerRules {
    /// For tools not named in `tools`.
    pub default: Decision,
    /// Per tool name, as the server lists it.
    pub tools: BTreeMap<String, Decision>,
}

impl Default for ServerRules {
    fn default() -> Self {
        Self {
            default: Decision::Ask,
            tools: BTreeMap::new(),
        }
    }
}

impl ServerRules {
    /// Rules with `default` for every tool but those in `tools`.
    pub fn new(default: Decision, tools: BTreeMap<String, Decision>) -> Self {
        Self { default, tools }
    }
}

impl ServerRules {
    /// What the configuration says about `tool`.
    pub fn decide(&self, tool: &str) -> Decision {
        self.tools.get(tool).copied().unwrap_or(self.default)
    }
}

/// The decision when the configuration says `configured` and the consumer's policy says
/// `policy`: a denial from either wins, an allowance in the configuration stands, and where
/// the configuration asks, the policy decides (a `--yes` policy allows, an interactive one
/// asks).
pub fn combine(configured: Decision, policy: Decision) -> Decision {
    match (configured, policy) {
        (Decision::Deny, _) | (_, Decision::Deny) => Decision::Deny,
        (Decision::Allow, _) => Decision::Allow,
        (Decision::Ask, policy) => policy,
    }
}

/// A policy that leaves every decision to a person: the default for MCP tools.
#[derive(Debug, Clone, Copy, Default)]
pub struct AskAlways;

impl Policy for AskAlways {
    fn decide(&self, _: &CallRequest<'_>) -> Decision {
        Decision::Ask
    }
}

/// A policy that allows everything: for a user who said `--yes`, or a test.
#[derive(Debug, Clone, Copy, Default)]
pub struct AllowAll;

impl Policy for AllowAll {
    fn decide(&self, _: &CallRequest<'_>) -> Decision {
        Decision::Allow
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn configuration_and_policy_combine() {
        let tools = BTreeMap::from([("rm".to_owned(), Decision::Deny)]);
        let rules = ServerRules::new(Decision::Allow, tools);
        assert_eq!(rules.decide("read"), Decision::Allow);
        assert_eq!(rules.decide("rm"), Decision::Deny);
        assert_eq!(ServerRules::default().decide("x"), Decision::Ask);
        assert_eq!(combine(Decision::Deny, Decision::Allow), Decision::Deny);
        assert_eq!(combine(Decision::Allow, Decision::Ask), Decision::Allow);
        assert_eq!(combine(Decision::Allow, Decision::Deny), Decision::Deny);
        assert_eq!(combine(Decision::Ask, Decision::Allow), Decision::Allow);
        assert_eq!(combine(Decision::Ask, Decision::Ask), Decision::Ask);
        assert_eq!(Decision::parse("ask"), Some(Decision::Ask));
        assert_eq!(Decision::parse("yes"), None);
    }
}
