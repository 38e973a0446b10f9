//! The command line as clap sees it: every subcommand and flag, with the help text a user
//! reads. Values are checked here only as far as their shape; what they mean is checked by
//! the library (a server id, a URL, a configuration entry).

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

const EXIT_CODES: &str = "\
Exit codes:
  0  success
  1  any other failure (I/O, internal)
  2  usage error: a bad flag, a missing value, an invalid server id or JSON argument
  3  configuration error: unknown or duplicate server id, a file that does not parse
  4  connection failure: the server did not start, initialize or authorize
  5  tool error: the tool reported an error, the server answered with an error, or timed out
  6  the call was denied by the permission policy (nothing was sent)
  7  the server needs authorization: log in with `mcp-host login ID`";

/// Run and talk to MCP servers: manage their configuration, inspect and call them, log in.
#[derive(Debug, Parser)]
#[command(name = "mcp-host", version, after_help = EXIT_CODES)]
pub(crate) struct Cli {
    /// Print machine-readable JSON on stdout instead of tables (field names are stable and
    /// documented in docs/cli.md).
    #[arg(long, global = true)]
    pub(crate) json: bool,
    /// The project directory whose `.mcp.json` and `.mcp-host/config.json` apply (default:
    /// the current directory).
    #[arg(long, global = true, value_name = "DIR")]
    pub(crate) project: Option<PathBuf>,
    /// Log more on standard error, one level per `-v`: warnings, then what happens (server
    /// states, each server's stderr), then debug and trace detail. `serve` starts at what
    /// happens. `RUST_LOG=target=level,...` picks targets.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub(crate) verbose: u8,
    /// Log less, one level per `-q`, down to nothing.
    #[arg(short, long, global = true, action = clap::ArgAction::Count, conflicts_with = "verbose")]
    pub(crate) quiet: u8,
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// `import`'s flags.
#[derive(Debug, clap::Args)]
pub(crate) struct ImportArgs {
    /// The client whose configuration to read: claude-desktop, claude-code, vscode, cursor,
    /// codex, goose or zed.
    #[arg(long, value_parser = ["claude-desktop", "claude-code", "vscode", "cursor", "codex", "goose", "zed"])]
    pub(crate) from: String,
    /// Read this file instead of the client's usual ones.
    #[arg(long)]
    pub(crate) path: Option<PathBuf>,
    /// The layer to write into.
    #[arg(long, value_enum, default_value_t = EditScope::Project)]
    pub(crate) scope: EditScope,
    /// Show what would be imported; write nothing.
    #[arg(long)]
    pub(crate) dry_run: bool,
    /// Replace a server the file already has with the imported one (otherwise it is skipped
    /// and reported).
    #[arg(long)]
    pub(crate) force: bool,
    /// Read the answers to VS Code's inputs from stdin, one line each in the order asked, when
    /// stdin is not a terminal (at a terminal they are asked without this flag).
    #[arg(long)]
    pub(crate) inputs_from_stdin: bool,
}

/// A file layer a command edits: Claude Code's scopes, `global` kept as a synonym of `user`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum EditScope {
    /// Yours, for this project only, kept outside its tree (under the user's configuration
    /// directory, keyed by the project's path): the default of `add`.
    Local,
    /// `<project>/.mcp-host/config.json`, in the tree, shared with the repository (secrets
    /// typed on the command line are kept out of it).
    Project,
    /// The user's file for every project (`$MCP_HOST_CONFIG`, else
    /// `~/.config/mcp-host/config.json`); `global` is the same.
    #[value(name = "user", alias = "global")]
    Global,
}

/// A model API whose tool definitions `tools --format` prints (docs/model-apis.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ModelApi {
    /// The Anthropic Messages API.
    Anthropic,
    /// OpenAI Chat Completions, strict where the schema already fits strict mode.
    Openai,
    /// The OpenAI Responses API, strict as for `openai`.
    OpenaiResponses,
    /// OpenAI Chat Completions rewritten to fit strict mode.
    OpenaiStrict,
    /// The Gemini API (`functionDeclarations`).
    Gemini,
}

impl From<ModelApi> for mcp_host::export::Format {
    fn from(api: ModelApi) -> Self {
        match api {
            ModelApi::Anthropic => Self::Anthropic,
            ModelApi::Openai => Self::OpenAiChat,
            ModelApi::OpenaiResponses => Self::OpenAiResponses,
            ModelApi::OpenaiStrict => Self::OpenAiStrict,
            ModelApi::Gemini => Self::Gemini,
        }
    }
}

/// The layers a command reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ReadScope {
    /// User, project and local merged, the later winning: what a host runs.
    Effective,
    /// Your private file for this project only.
    Local,
    /// The project's files only.
    Project,
    /// The user file only (`global` is the same).
    #[value(name = "user", alias = "global")]
    Global,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Add a server to a configuration file (as `claude mcp add` and `codex mcp add` do).
    #[command(after_help = "\
Examples:
  mcp-host add docs https://example.com/mcp
  mcp-host add -t http -s project api https://api.example.com/mcp -H 'Authorization: Bearer TOKEN'
  mcp-host add files -e LOG=debug -- npx -y @modelcontextprotocol/server-filesystem .
  mcp-host add api --url https://api.example.com/mcp --bearer-token-env-var API_TOKEN
  mcp-host add local --transport stdio --command ./server --arg --verbose --env LOG=debug

Without --scope the server goes to the local scope: yours, for this project only, kept outside
its tree. With --scope project, secrets given on the command line (-e values and headers whose
name says credential) go to your private file and the project file holds `${VAR}` references.")]
    Add(Box<AddArgs>),
    /// Add a server from a JSON entry as `.mcp.json` and `claude mcp add-json` write it
    /// (`type`, `command`, `args`, `env`, `cwd`, `url`, `headers`).
    #[command(after_help = "\
Examples:
  mcp-host add-json weather '{\"type\":\"http\",\"url\":\"https://api.example.com/mcp\"}'
  mcp-host add-json files '{\"command\":\"npx\",\"args\":[\"-y\",\"@modelcontextprotocol/server-filesystem\",\".\"]}'")]
    AddJson {
        /// The server id.
        id: String,
        /// The entry, a JSON object.
        #[arg(value_name = "JSON")]
        entry: String,
        /// The layer to write (default: local).
        #[arg(short, long, value_enum)]
        scope: Option<EditScope>,
        /// Overwrite a server of the same id in the same layer.
        #[arg(long)]
        replace: bool,
    },
    /// Import Claude Desktop's servers (`claude mcp add-from-claude-desktop`; the same as
    /// `import --from claude-desktop`).
    AddFromClaudeDesktop {
        /// The layer to write (default: local).
        #[arg(short, long, value_enum)]
        scope: Option<EditScope>,
        /// Read this file instead of Claude Desktop's usual one.
        #[arg(long)]
        path: Option<PathBuf>,
        /// Show what would be imported; write nothing.
        #[arg(long)]
        dry_run: bool,
        /// Replace a server the file already has.
        #[arg(long)]
        force: bool,
    },
    /// Show one configured server: where it is defined, how it is reached, whether it is
    /// enabled and approved (as `claude mcp get` and `codex mcp get` do). Nothing is started.
    Get {
        /// The server id.
        id: String,
        /// Left over from the old `get ID PROMPT`, which is now `prompt get ID PROMPT`: given,
        /// it is an error that says so.
        #[arg(hide = true)]
        prompt: Option<String>,
        /// See `prompt`.
        #[arg(long, hide = true, value_name = "NAME=VALUE", value_parser = key_value)]
        arg: Vec<(String, String)>,
    },
    /// Withdraw every approval of this project's servers, so that each asks again (`claude mcp
    /// reset-project-choices`).
    ResetProjectChoices,
    /// Import the servers another MCP client has configured (Claude Desktop, Claude Code,
    /// VS Code, Cursor, Codex, goose, Zed) into one of our files.
    #[command(after_help = "\
Examples:
  mcp-host import --from claude-code --dry-run
  mcp-host import --from codex --scope global
  mcp-host import --from vscode --path .vscode/mcp.json --json")]
    Import(ImportArgs),
    /// List the configured servers (the files, not the running state); with an id, show that
    /// one as `get` does.
    List {
        /// One server to show.
        id: Option<String>,
        /// Which layer to show.
        #[arg(short, long, value_enum, default_value_t = ReadScope::Effective)]
        scope: ReadScope,
    },
    /// Remove a server from one layer (another layer's definition stays effective). Without
    /// --scope, from the one layer that defines it; an id several layers define needs --scope.
    Remove {
        /// The server id.
        id: String,
        /// The layer to edit.
        #[arg(short, long, value_enum)]
        scope: Option<EditScope>,
    },
    /// Enable a server in one layer (default: the layer whose entry disables it).
    Enable {
        /// The server id.
        id: String,
        /// The layer to edit.
        #[arg(short, long, value_enum)]
        scope: Option<EditScope>,
    },
    /// Disable a server in one layer (default: local, which switches off a server of any
    /// layer for you in this project without touching a shared file).
    Disable {
        /// The server id.
        id: String,
        /// The layer to edit.
        #[arg(short, long, value_enum)]
        scope: Option<EditScope>,
    },
    /// Connect to one server, initialize and list its tools; report what it said and how long
    /// it took. Exits 0 only if all of that worked.
    Test {
        /// The server id.
        id: String,
        /// Which layer's definition to test.
        #[arg(long, value_enum, default_value_t = ReadScope::Effective)]
        scope: ReadScope,
    },
    /// Connect to the enabled servers and show their state (the `/mcp` view); with an id, the
    /// details of one.
    Status {
        /// One server's details.
        id: Option<String>,
    },
    /// List the tools as a model sees them: exposed name, origin and description; with a
    /// server and a tool, that tool's input schema in text.
    Tools {
        /// Only this server's tools.
        id: Option<String>,
        /// One tool (its name on the server, or its exposed name): show its description and
        /// its arguments.
        #[arg(requires = "id", conflicts_with = "format")]
        tool: Option<String>,
        /// Print the definitions as this model API's `tools` field takes them (JSON on
        /// stdout; what was rewritten or left out, and why, on stderr).
        #[arg(long, value_enum, value_name = "API")]
        format: Option<ModelApi>,
    },
    /// Call a tool, after the permission check (asks on the terminal unless allowed).
    Call(Box<CallArgs>),
    /// List resources.
    Resources {
        /// Only this server's resources.
        id: Option<String>,
    },
    /// Read one resource.
    Read {
        /// The server id.
        id: String,
        /// The resource URI.
        uri: String,
    },
    /// List prompts.
    Prompts {
        /// Only this server's prompts.
        id: Option<String>,
    },
    /// Prompts: `prompt get ID PROMPT` fills one in.
    #[command(subcommand)]
    Prompt(PromptCommand),
    /// List a server's skills (the skills extension, SEP-2640): name, file count, URI,
    /// description. No skill file is read.
    Skills {
        /// The server id.
        id: String,
    },
    /// Load one skill and print its SKILL.md, once its size, digest and frontmatter match
    /// what the server listed (a mismatch is refused, exit code 5).
    Skill {
        /// The server id.
        id: String,
        /// The skill's name, or the URI of its SKILL.md.
        name: String,
    },
    /// Follow the tasks `mcp-host` started (a tool call a server runs as a task): list them
    /// with their status asked again, show one, wait for its result, or cancel it. They are
    /// kept in `tasks.json`, so this works after the process that started them has exited.
    #[command(subcommand)]
    Tasks(TasksCommand),
    /// Log in to an OAuth-protected HTTP server (opens a browser, or prints the URL).
    Login {
        /// The server id.
        id: String,
        /// The scopes to ask for, comma-separated (`codex mcp login --scopes`), instead of the
        /// configured `oauth.scope` or what the server asks for.
        #[arg(long, value_name = "SCOPE,...", value_delimiter = ',')]
        scopes: Vec<String>,
        /// Log in to the upstream server `ID` of this gateway file (`mcp-host serve
        /// --gateway FILE` then finds its tokens), instead of a configured server.
        #[arg(long, value_name = "FILE")]
        gateway: Option<PathBuf>,
        /// Do not open a browser or listen on loopback: log in with a code on another device
        /// where the server offers it (as --device), else print the URL and read the address
        /// the browser ended on from stdin (for machines without a browser).
        #[arg(long)]
        no_browser: bool,
        /// Log in with a code entered on another device (OAuth device flow, RFC 8628): print
        /// the address and the code, and wait for the login to be approved there.
        #[arg(long, conflicts_with = "no_browser")]
        device: bool,
    },
    /// Forget the stored tokens of an OAuth server.
    Logout {
        /// The server id.
        id: String,
        /// Forget the tokens of the gateway file's upstream `ID` instead of a configured
        /// server's.
        #[arg(long, value_name = "FILE")]
        gateway: Option<PathBuf>,
    },
    /// An interactive session: `/mcp`, `/tools`, `/call`, `/read`, `/get` and more (type
    /// `/help`), with `/mcp` answering while calls run.
    Shell {
        /// Allow every call the configuration does not deny, without asking.
        #[arg(long)]
        yes: bool,
    },
    /// Approve a project's servers to run. A project's files come with its repository, so
    /// their servers run only once approved here; editing what one runs withdraws it.
    /// Without ids, lists the project's servers and whether each is approved.
    Trust {
        /// The servers to approve, as their entries are written now.
        ids: Vec<String>,
        /// Approve every server the project's files define.
        #[arg(long, conflicts_with = "ids")]
        all: bool,
    },
    /// Withdraw the approval of a project's server: it does not run until approved again.
    Untrust {
        /// The server id.
        id: String,
    },
    /// Show the whole flow against a bundled demo server: no configuration, no network.
    Demo,
    /// Serve MCP in front of the servers of a gateway file: category mode (two tools that
    /// load the others on demand), passthrough or meta mode. Over stdio unless `--http`.
    #[command(after_help = "\
Examples:
  mcp-host serve --gateway gateway.json
  mcp-host serve --gateway gateway.json --http 127.0.0.1:8931

Logs (start-up summary, sessions, one line per call, read or prompt, each upstream's stderr)
go to standard error or the file's `logFile`, never to standard output; -v/-q and RUST_LOG
choose what is shown, --log-format how.")]
    Serve {
        /// The gateway file (see `mcp-host gateway schema` and docs/gateway.md).
        #[arg(long, value_name = "FILE")]
        gateway: PathBuf,
        /// Serve Streamable HTTP at this address (endpoint `/mcp`) instead of stdio. Bind a
        /// loopback address unless clients elsewhere must reach it.
        #[arg(long, value_name = "ADDR")]
        http: Option<SocketAddr>,
        /// Over HTTP, require `Authorization: Bearer <token>` with the token held in this
        /// environment variable.
        #[arg(long, value_name = "VAR", requires = "http")]
        bearer_token_env: Option<String>,
        #[command(flatten)]
        http_flags: crate::gateway::HttpFlags,
        /// How log lines are written: `text`, or `json` (one object per line with
        /// `timestamp`, `level`, `target`, `message` and `fields`).
        #[arg(long, value_enum, value_name = "FORMAT", default_value_t)]
        log_format: crate::logging::LogFormat,
    },
    /// Gateway file tools.
    #[command(subcommand)]
    Gateway(GatewayCommand),
    /// What the servers' tool definitions cost a model: bytes and approximate tokens, exposed
    /// directly, through category mode, and per category.
    Budget {
        /// Measure the servers and categories of this gateway file (default: the configured
        /// servers, exposed directly).
        #[arg(long, value_name = "FILE")]
        gateway: Option<PathBuf>,
    },
    /// The server processes that any `mcp-host` of this user started and that still run:
    /// server id, pid, process group, role (keeper, server, descendant), host pid, age, and
    /// whether their host is alive or gone (an orphan).
    #[command(after_help = "\
Examples:
  mcp-host ps
  mcp-host ps --kill-orphans

Records live in $XDG_RUNTIME_DIR/mcp-host/ (or mcp-host-<uid> in the temporary directory).")]
    Ps {
        /// End (SIGKILL to the process group) every server whose host is gone, and list what
        /// was ended.
        #[arg(long)]
        kill_orphans: bool,
    },
    /// Keep secrets in the OS keyring, for `{"keyring": "NAME"}` in configuration files
    /// (values are typed at a prompt or piped, never given as arguments).
    #[command(subcommand)]
    Secret(crate::secret::SecretCommand),
    /// Print the completion script for a shell (bash, zsh, fish, powershell, elvish).
    #[command(after_help = "\
Examples:
  mcp-host completions bash > ~/.local/share/bash-completion/completions/mcp-host
  mcp-host completions zsh > ~/.zfunc/_mcp-host
  mcp-host completions fish > ~/.config/fish/completions/mcp-host.fish")]
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the manual page mcp-host(1) in roff (`mcp-host man | man -l -`), or write one
    /// page per command into a directory.
    Man {
        /// Write `mcp-host.1` and `mcp-host-<command>.1` for each command into DIR instead.
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
    /// The bundled demo server itself (stdio, or Streamable HTTP at `--http ADDR`), which
    /// `demo` starts.
    #[command(hide = true)]
    DemoServer {
        /// Serve Streamable HTTP at this address (endpoint `/mcp`) instead of stdio.
        #[arg(long, value_name = "ADDR")]
        http: Option<SocketAddr>,
    },
}

/// `mcp-host prompt …`.
#[derive(Debug, Subcommand)]
pub(crate) enum PromptCommand {
    /// Get one prompt with its arguments filled in.
    Get {
        /// The server id.
        id: String,
        /// The prompt's name.
        prompt: String,
        /// A prompt argument, `NAME=VALUE` (repeatable).
        #[arg(long, value_name = "NAME=VALUE", value_parser = key_value)]
        arg: Vec<(String, String)>,
    },
}

/// `mcp-host gateway …`.
#[derive(Debug, Subcommand)]
pub(crate) enum GatewayCommand {
    /// Print the JSON Schema of the gateway file (the one in docs/gateway.schema.json).
    Schema,
}

/// `add`'s flags: seed 000 §5.2's list, references to secrets kept in the environment, and
/// the spellings of `claude mcp add` (`-s`, `-t`, `-e`, `-H "Name: value"`) and `codex mcp add`
/// (`--env`, `--url`, `--bearer-token-env-var`).
#[derive(Debug, Args)]
pub(crate) struct AddArgs {
    /// The server id: 1 to 64 characters from a-z, A-Z, 0-9, `_` and `-`.
    pub(crate) id: String,
    /// The shorthand: a URL (`http(s)://`, or `sse://` for the legacy transport), or a
    /// command line (in one string, or as the program then its arguments).
    #[arg(value_name = "COMMAND_OR_URL")]
    pub(crate) target: Vec<String>,
    /// The shorthand for a command: after `--`, the program and its arguments.
    #[arg(last = true, value_name = "COMMAND")]
    pub(crate) command_line: Vec<String>,
    /// The transport: with the shorthand, what it is (`-t http NAME URL`); else with `--url`
    /// or `--command`.
    #[arg(short, long, value_enum)]
    pub(crate) transport: Option<TransportArg>,
    /// The layer to write (default: local, yours for this project, outside its tree).
    #[arg(short, long, value_enum)]
    pub(crate) scope: Option<EditScope>,
    /// Whether a host connects to it.
    #[arg(long, value_name = "BOOL", action = clap::ArgAction::Set)]
    pub(crate) enabled: Option<bool>,
    /// How long one request may go without an answer or progress before it is cancelled
    /// (default 30000).
    #[arg(long, value_name = "MS")]
    pub(crate) request_timeout_ms: Option<u64>,
    /// Overwrite a server of the same id in the same layer.
    #[arg(long)]
    pub(crate) replace: bool,

    /// HTTP: the endpoint.
    #[arg(long, help_heading = "HTTP")]
    pub(crate) url: Option<String>,
    /// HTTP: a header sent with every request, `"Name: value"` or `Name=value`.
    #[arg(short = 'H', long, value_name = "NAME: VALUE", help_heading = "HTTP")]
    pub(crate) header: Vec<String>,
    /// HTTP: send `Authorization: Bearer <the value of VAR>` (Codex's
    /// `bearer_token_env_var`; the file holds the variable's name).
    #[arg(long, value_name = "VAR", help_heading = "HTTP")]
    pub(crate) bearer_token_env_var: Option<String>,
    /// HTTP: a header whose value is read from an environment variable when the configuration
    /// loads, `NAME=VAR` (the file holds the variable's name, not the secret).
    #[arg(long, value_name = "NAME=VAR", help_heading = "HTTP")]
    pub(crate) header_env: Vec<String>,
    /// OAuth: the authorization endpoint, when the server does not advertise one.
    #[arg(long, help_heading = "HTTP")]
    pub(crate) oauth_authorization_url: Option<String>,
    /// OAuth: the token endpoint.
    #[arg(long, help_heading = "HTTP")]
    pub(crate) oauth_token_url: Option<String>,
    /// OAuth: the dynamic client registration endpoint.
    #[arg(long, help_heading = "HTTP")]
    pub(crate) oauth_registration_url: Option<String>,
    /// OAuth: a pre-registered client id.
    #[arg(long, visible_alias = "client-id", help_heading = "HTTP")]
    pub(crate) oauth_client_id: Option<String>,
    /// OAuth: the client secret (written into the file, which is then made private).
    #[arg(long, help_heading = "HTTP")]
    pub(crate) oauth_client_secret: Option<String>,
    /// OAuth: the client secret from an environment variable, by name.
    #[arg(long, value_name = "VAR", help_heading = "HTTP")]
    pub(crate) oauth_client_secret_env: Option<String>,
    /// OAuth: the scope to ask for.
    #[arg(long, help_heading = "HTTP")]
    pub(crate) oauth_scope: Option<String>,

    /// stdio: the program.
    #[arg(long, help_heading = "stdio")]
    pub(crate) command: Option<String>,
    /// stdio: one argument (repeatable, in order).
    #[arg(long, allow_hyphen_values = true, help_heading = "stdio")]
    pub(crate) arg: Vec<String>,
    /// stdio: the working directory.
    #[arg(long, help_heading = "stdio")]
    pub(crate) cwd: Option<String>,
    /// stdio: an environment variable for the server, `NAME=VALUE`.
    #[arg(short, long, value_name = "NAME=VALUE", help_heading = "stdio")]
    pub(crate) env: Vec<String>,
    /// stdio: an environment variable for the server taken from this process's variable VAR
    /// when the configuration loads, `NAME=VAR`.
    #[arg(long, value_name = "NAME=VAR", help_heading = "stdio")]
    pub(crate) env_from: Vec<String>,
}

/// `add --transport`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum TransportArg {
    /// Streamable HTTP.
    Http,
    /// The deprecated HTTP+SSE transport (2024-11-05).
    Sse,
    /// A local program on stdin and stdout.
    Stdio,
}

/// `call`'s flags.
#[derive(Debug, Args)]
pub(crate) struct CallArgs {
    /// The server id.
    pub(crate) id: String,
    /// The tool: its name on the server, or its exposed name (`mcp_<server>_…`).
    pub(crate) tool: String,
    /// The arguments, a JSON object.
    #[arg(long, value_name = "JSON")]
    pub(crate) args: Option<String>,
    /// Allow the call without asking (a `deny` in the configuration still wins).
    #[arg(long, short = 'y')]
    pub(crate) yes: bool,
    /// Give up after this many milliseconds without an answer or progress.
    #[arg(long, value_name = "MS")]
    pub(crate) timeout_ms: Option<u64>,
}

/// `tasks …`.
#[derive(Debug, Subcommand)]
pub(crate) enum TasksCommand {
    /// The kept tasks (of one server), the unfinished ones asked about again first.
    List {
        /// Only this server's tasks.
        id: Option<String>,
        /// The tasks the server itself lists (`tasks/list`, MCP 2025-11-25 servers only),
        /// whoever started them.
        #[arg(long, requires = "id")]
        server: bool,
    },
    /// One task's status, asked of its server.
    Get {
        /// The server id.
        id: String,
        /// The task id.
        task: String,
    },
    /// Wait for a task to end and print its result, as `call` prints a tool's.
    Result {
        /// The server id.
        id: String,
        /// The task id.
        task: String,
    },
    /// Ask the server to cancel a task.
    Cancel {
        /// The server id.
        id: String,
        /// The task id.
        task: String,
    },
}

/// `NAME=VALUE`, split at the first `=`; the name must not be empty.
fn key_value(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_owned(), v.to_owned())),
        _ => Err("expected NAME=VALUE".to_owned()),
    }
}

/// Headers given with `--header`, each `Name: value` (as curl and Claude Code write them) or
/// `Name=value`, split at whichever of `:` and `=` comes first (neither can be part of a header
/// name). The error names the position, never the text.
pub(crate) fn headers(items: &[String]) -> Result<Vec<(String, String)>, String> {
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let at = item.find([':', '=']);
            match at {
                Some(at) if !item[..at].trim().is_empty() => {
                    let value = &item[at + 1..];
                    let value = if item.as_bytes()[at] == b':' {
                        value.trim_start()
                    } else {
                        value
                    };
                    Ok((item[..at].trim().to_owned(), value.to_owned()))
                }
                _ => Err(format!(
                    "--header value number {} is not `Name: value` or `Name=value`",
                    i + 1
                )),
            }
        })
        .collect()
}

/// `NAME=VALUE` pairs given with `flag`, split at the first `=`. The error names the flag and
/// the position, never the text: a header or environment value may be a secret.
pub(crate) fn pairs(flag: &str, items: &[String]) -> Result<Vec<(String, String)>, String> {
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            key_value(item).map_err(|_| {
                format!(
                    "--{flag} value number {} is not NAME=VALUE (a name, `=`, then the value)",
                    i + 1
                )
            })
        })
        .collect()
}
