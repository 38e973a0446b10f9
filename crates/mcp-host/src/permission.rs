//! Permission hooks (seed 000 §8): before any tool call leaves the host, a policy decides
//! whether it may; a person is asked when the policy says so. A call that is not allowed never
//! reaches the server: it comes back to the caller as a tool error, like any other failure a
//! model should read.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;

use mcp_protocol::JsonObject;

use crate::operation::Operation;

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

/// What a call would do: run one of the server's tools, or one of the resource and prompt
/// operations the host offers as tools. A policy tells them apart here, never by name: a
/// server may name a tool `resources/read`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CallKind {
    /// `tools/call` of the server's tool named in [`CallRequest::tool`].
    Tool,
    /// A resource or prompt operation; [`CallRequest::tool`] is its method.
    Operation(Operation),
}

/// One call about to be made, as a policy and a person see it. The arguments are the model's
/// and the tool metadata is the server's: neither is trusted.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct CallRequest<'a> {
    /// The server's id.
    pub server: &'a str,
    /// The tool's name as the server lists it; for an operation, its method
    /// (`resources/read`), and [`kind`](Self::kind) says which it is.
    pub tool: &'a str,
    /// The arguments that would be sent (an operation's: `uri`, `name`, `arguments`, `cursor`).
    pub arguments: &'a JsonObject,
    /// A tool or an operation.
    pub kind: CallKind,
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
    /// For tools not named in `tools`, and operations without a rule of their own.
    pub default: Decision,
    /// Per tool name, as the server lists it.
    pub tools: BTreeMap<String, Decision>,
    /// For the resource operations (`permission.resources`); `default` when `None`.
    pub resources: Option<Decision>,
    /// For the prompt operations (`permission.prompts`); `default` when `None`.
    pub prompts: Option<Decision>,
}

impl Default for ServerRules {
    fn default() -> Self {
        Self {
            default: Decision::Ask,
            tools: BTreeMap::new(),
            resources: None,
            prompts: None,
        }
    }
}

impl ServerRules {
    /// Rules with `default` for every tool but those in `tools`.
    pub fn new(default: Decision, tools: BTreeMap<String, Decision>) -> Self {
        Self {
            default,
            tools,
            ..Self::default()
        }
    }
}

impl ServerRules {
    /// What the configuration says about `tool`.
    pub fn decide(&self, tool: &str) -> Decision {
        self.tools.get(tool).copied().unwrap_or(self.default)
    }

    /// What the configuration says about `operation`: its group's rule, else the default.
    /// Tool rules never apply, whatever the tools are called.
    pub fn decide_operation(&self, operation: Operation) -> Decision {
        let group = if operation.is_resources() {
            self.resources
        } else {
            self.prompts
        };
        group.unwrap_or(self.default)
    }

    /// What the configuration says about `call`.
    pub fn decide_call(&self, call: &CallRequest<'_>) -> Decision {
        match call.kind {
            CallKind::Tool => self.decide(call.tool),
            CallKind::Operation(op) => self.decide_operation(op),
        }
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

    #[test]
    fn operations_follow_their_group_then_the_default_never_a_tool_rule() {
        let tools = BTreeMap::from([("resources/read".to_owned(), Decision::Deny)]);
        let mut rules = ServerRules::new(Decision::Ask, tools);
        rules.resources = Some(Decision::Allow);
        let args = JsonObject::new();
        let read = CallRequest {
            server: "s",
            tool: "resources/read",
            arguments: &args,
            kind: CallKind::Operation(Operation::ReadResource),
        };
        let tool = CallRequest {
            kind: CallKind::Tool,
            ..read
        };
        let prompt = CallRequest {
            tool: "prompts/get",
            kind: CallKind::Operation(Operation::GetPrompt),
            ..read
        };
        assert_eq!(rules.decide_call(&read), Decision::Allow);
        assert_eq!(rules.decide_call(&tool), Decision::Deny);
        assert_eq!(rules.decide_call(&prompt), Decision::Ask);
        rules.prompts = Some(Decision::Deny);
        assert_eq!(rules.decide_call(&prompt), Decision::Deny);
    }
}
