//! `mcp-host completions SHELL` and `mcp-host man`: generated from the parser itself, so each
//! names every command `mcp-host --help` lists.

use super::*;

/// The commands `mcp-host --help` lists (the `Commands:` section), `help` aside.
fn listed_commands() -> Vec<String> {
    let run = User::new().run(&["--help"]);
    run.code(0);
    let commands: Vec<String> = run
        .stdout
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        // A command's line starts with its name at two spaces; a wrapped description is
        // indented further.
        .filter(|l| !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_owned)
        .collect();
    // Presence first: the help lists the commands this test means.
    for known in ["add", "call", "shell", "serve", "completions", "man"] {
        assert!(
            commands.iter().any(|c| c == known),
            "{known} not in {commands:?}\n{}",
            run.stdout
        );
    }
    commands
}

#[test]
fn the_bash_script_completes_every_listed_command() {
    let commands = listed_commands();
    let run = User::new().run(&["completions", "bash"]);
    run.code(0).out_has("complete -F _mcp__host");
    // bash's script has one `case` arm per command path: `mcp__host,call)` and the like.
    for command in &commands {
        let arm = format!("mcp__host,{command})");
        assert!(
            run.stdout.contains(&arm),
            "no {arm:?} in the bash script:\n{}",
            run.stdout
        );
    }
}

#[test]
fn every_shell_gets_a_script_naming_the_commands() {
    for (shell, marker) in [
        ("zsh", "#compdef mcp-host"),
        ("fish", "complete -c mcp-host"),
        ("powershell", "Register-ArgumentCompleter"),
    ] {
        let run = User::new().run(&["completions", shell]);
        run.code(0).out_has(marker);
        for command in ["call", "shell", "completions"] {
            assert!(
                run.stdout.contains(command),
                "{shell}: no {command}\n{}",
                run.stdout
            );
        }
    }
    User::new().run(&["completions", "tcsh"]).code(2);
}

#[test]
fn the_man_page_has_every_listed_command() {
    let commands = listed_commands();
    let run = User::new().run(&["man"]);
    run.code(0)
        .out_has(".TH mcp-host 1")
        .out_has(".SH SUBCOMMANDS");
    let page = &run.stdout;
    let section = &page[page.find(".SH SUBCOMMANDS").unwrap()..];
    for command in &commands {
        // Each subcommand is an entry of its own: `mcp\-host\-call(1)` in roff.
        let entry = format!("mcp\\-host\\-{}(1)", command.replace('-', "\\-"));
        assert!(section.contains(&entry), "no {entry:?} in:\n{section}");
    }
    assert!(!page.contains("demo\\-server"), "{page}");
    // The version is the binary's.
    assert!(
        page.contains(env!("CARGO_PKG_VERSION")),
        "no version in the page:\n{page}"
    );

    // One page per command into a directory.
    let u = User::new();
    let dir = u.project.path().join("man");
    u.run(&["man", "--dir", dir.to_str().unwrap()]).code(0);
    for command in &commands {
        let page = std::fs::read_to_string(dir.join(format!("mcp-host-{command}.1")))
            .unwrap_or_else(|e| panic!("no page for {command}: {e}"));
        assert!(page.contains(".TH mcp-host-"), "{page}");
    }
}
