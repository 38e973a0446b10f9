//! `import --from vscode` with VS Code's `${input:ID}` answered at import, through the built
//! binary and the real Linux kernel keyring (`MCP_HOST_KEYRING=keyutils`, as tests/it/keyring.rs
//! uses it): the answer goes to the keyring, the user's own file points the input's variable at
//! it, the project file holds only `${VSCODE_INPUT_…}`, and the server receives the value.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use super::keyring::run_piped;
use super::*;

/// Every file under `dir`, with its text.
fn texts(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(texts(&path));
        } else if let Ok(text) = std::fs::read_to_string(&path) {
            out.push((path, text));
        }
    }
    out
}

#[test]
fn an_answered_vscode_input_reaches_the_server_through_the_keyring_and_no_file_holds_it() {
    let user = User::new();
    // An id no other run uses: the kernel keyring is the user's, shared by every test run.
    let id = format!("tok-{}", std::process::id());
    let variable = format!("VSCODE_INPUT_TOK_{}", std::process::id());
    let entry = format!("vscode-input-{id}");
    const ANSWER: &str = "answer-planted-51d3";
    let seen = user.home.path().join("seen-key");
    let script = format!(
        "printf %s \"$DEMO_KEY\" > '{}'; exec '{}' demo-server",
        seen.display(),
        bin()
    );
    let vscode = user.project.path().join(".vscode/mcp.json");
    std::fs::create_dir_all(vscode.parent().unwrap()).unwrap();
    std::fs::write(
        &vscode,
        serde_json::to_vec_pretty(&serde_json::json!({
            "inputs": [{"type": "promptString", "id": id, "description": "Demo token",
                        "password": true}],
            "servers": {"demo": {"type": "stdio", "command": "sh", "args": ["-c", script],
                                 "env": {"DEMO_KEY": format!("Bearer ${{input:{id}}}")}}}
        }))
        .unwrap(),
    )
    .unwrap();

    // No terminal and no flag: nothing asked, the note names the variable and the secret.
    let quiet = user.run_with(
        &["import", "--from", "vscode"],
        "MCP_HOST_KEYRING",
        "keyutils",
    );
    quiet
        .code(0)
        .out_has("added `demo`")
        .out_has(&variable)
        .out_has(&format!("mcp-host secret set {entry}"));

    // A dry run asks nothing, even with the flag: the keyring has no entry yet.
    run_piped(
        &user,
        &[
            "import",
            "--from",
            "vscode",
            "--dry-run",
            "--inputs-from-stdin",
        ],
        &format!("{ANSWER}\n"),
    )
    .code(0)
    .out_has("would add `demo`");
    run_piped(&user, &["secret", "get", &entry], "").code(3);

    // Answered on stdin: kept in the keyring, pointed at from the user's local file.
    let answered = run_piped(
        &user,
        &["import", "--from", "vscode", "--inputs-from-stdin"],
        &format!("{ANSWER}\n"),
    );
    let test = run_piped(&user, &["test", "demo"], "");
    let files = texts(user.home.path())
        .into_iter()
        .chain(texts(user.project.path()))
        .collect::<Vec<_>>();
    run_piped(&user, &["secret", "rm", &entry], "").code(0);
    let missing = run_piped(&user, &["test", "demo"], "");

    answered
        .code(0)
        .out_has(&format!("{variable} reads the keyring secret `{entry}`"));
    test.code(0);
    assert_eq!(
        std::fs::read_to_string(&seen).unwrap(),
        format!("Bearer {ANSWER}")
    );
    let project = std::fs::read_to_string(user.project_file()).unwrap();
    assert!(
        project.contains(&format!("Bearer ${{{variable}}}")),
        "{project}"
    );
    let reference = serde_json::json!({ "keyring": entry }).to_string();
    assert!(
        files.iter().any(|(_, t)| t.contains(&variable)
            && t.split_whitespace()
                .collect::<String>()
                .contains(&reference)),
        "no file points {variable} at the keyring: {files:#?}"
    );
    for (path, text) in &files {
        if path != &seen {
            assert!(!text.contains(ANSWER), "{}: {text}", path.display());
        }
    }
    for run in [&answered, &test] {
        assert!(
            !run.stdout.contains(ANSWER) && !run.stderr.contains(ANSWER),
            "{run:#?}"
        );
    }

    // The entry gone: loading says which variable and which entry.
    assert_ne!(missing.code, 0, "{missing:#?}");
    let all = format!("{}{}", missing.stdout, missing.stderr);
    assert!(
        all.contains(&variable) && all.contains(&entry),
        "{missing:#?}"
    );
}

/// At a terminal (a pseudo-terminal from util-linux's `script`), a `password: true` input is
/// asked by its description and typed without echo: the terminal's output shows the question
/// and never the answer, which still reaches the server.
#[test]
fn a_password_input_is_asked_at_a_terminal_without_echo() {
    use std::io::Read as _;
    let user = User::new();
    let id = format!("pty-{}", std::process::id());
    let entry = format!("vscode-input-{id}");
    const ANSWER: &str = "typed-planted-8a2f";
    let seen = user.home.path().join("seen-key");
    let script = format!(
        "printf %s \"$DEMO_KEY\" > '{}'; exec '{}' demo-server",
        seen.display(),
        bin()
    );
    let vscode = user.project.path().join(".vscode/mcp.json");
    std::fs::create_dir_all(vscode.parent().unwrap()).unwrap();
    std::fs::write(
        &vscode,
        serde_json::to_vec_pretty(&serde_json::json!({
            "inputs": [{"type": "promptString", "id": id, "description": "Pty demo token",
                        "password": true}],
            "servers": {"demo": {"type": "stdio", "command": "sh", "args": ["-c", script],
                                 "env": {"DEMO_KEY": format!("${{input:{id}}}")}}}
        }))
        .unwrap(),
    )
    .unwrap();
    let mut child = Command::new("script")
        .args([
            "-qefc",
            &format!("'{}' import --from vscode", bin()),
            "/dev/null",
        ])
        .current_dir(user.project.path())
        .env_clear()
        .env("HOME", user.home.path())
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("MCP_HOST_KEYRING", "keyutils")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<Vec<u8>>();
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = stdout.read(&mut buf) {
            if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                break;
            }
        }
    });
    // The answer is typed once the question shows, as a person would.
    let mut screen = Vec::new();
    while !String::from_utf8_lossy(&screen).contains("Pty demo token") {
        match rx.recv_timeout(std::time::Duration::from_secs(120)) {
            Ok(chunk) => screen.extend(chunk),
            Err(_) => panic!(
                "no question: {}",
                String::from_utf8_lossy(&screen).into_owned()
            ),
        }
    }
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(format!("{ANSWER}\n").as_bytes()).unwrap();
    while let Ok(chunk) = rx.recv_timeout(std::time::Duration::from_secs(120)) {
        screen.extend(chunk);
    }
    drop(stdin);
    let status = child.wait().unwrap();
    let screen = String::from_utf8_lossy(&screen).into_owned();
    let test = run_piped(&user, &["test", "demo"], "");
    run_piped(&user, &["secret", "rm", &entry], "").code(0);

    assert!(status.success(), "{status:?}: {screen}");
    assert!(
        screen.contains("Pty demo token") && screen.contains("(not shown)"),
        "{screen}"
    );
    assert!(screen.contains(&entry), "{screen}");
    assert!(!screen.contains(ANSWER), "the answer was echoed: {screen}");
    test.code(0);
    assert_eq!(std::fs::read_to_string(&seen).unwrap(), ANSWER);
}

/// No usable keyring: the servers are still imported, nothing is asked, stderr says why and the
/// report names the variable and the `secret set` that would keep the answer.
#[test]
fn without_a_keyring_inputs_are_not_asked_and_the_import_still_succeeds() {
    let user = User::new();
    let vscode = user.project.path().join(".vscode/mcp.json");
    std::fs::create_dir_all(vscode.parent().unwrap()).unwrap();
    std::fs::write(
        &vscode,
        serde_json::to_vec_pretty(&serde_json::json!({
            "inputs": [{"type": "promptString", "id": "key", "password": true}],
            "servers": {"demo": {"command": bin(), "args": ["demo-server"],
                                 "env": {"DEMO_KEY": "${input:key}"}}}
        }))
        .unwrap(),
    )
    .unwrap();
    let mut child = user
        .command(&["import", "--from", "vscode", "--inputs-from-stdin"])
        // A keyring this platform does not have.
        .env("MCP_HOST_KEYRING", "credential-manager")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"never-kept-77c1\n")
        .unwrap();
    let output = child.wait_with_output().unwrap();
    let run = Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    };
    run.code(0)
        .out_has("added `demo`")
        .out_has("mcp-host secret set vscode-input-key")
        .err_has("inputs are not asked");
    let project = std::fs::read_to_string(user.project_file()).unwrap();
    assert!(project.contains("${VSCODE_INPUT_KEY}"), "{project}");
    assert!(!project.contains("never-kept-77c1"), "{project}");
}
