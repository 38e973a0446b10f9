//! `cargo xtask cluster`'s own tests: base64 as RFC 4648 has it, and nginx's start judged by
//! nginx itself, never by whoever holds its port.

use super::*;

#[test]
fn base64_is_rfc_4648s() {
    // RFC 4648 section 10's test vectors.
    for (plain, encoded) in [
        ("", ""),
        ("f", "Zg=="),
        ("fo", "Zm8="),
        ("foo", "Zm9v"),
        ("foob", "Zm9vYg=="),
        ("fooba", "Zm9vYmE="),
        ("foobar", "Zm9vYmFy"),
    ] {
        assert_eq!(base64(plain.as_bytes()), encoded, "{plain:?}");
    }
    assert_eq!(base64(&[0xff; 32]).len(), 44);
}

/// A stand-in for nginx: `sh` running `script` in `dir`.
fn fake_nginx(dir: &Path, script: &str) -> Child {
    Command::new("sh")
        .args(["-c", script])
        .current_dir(dir)
        .stdin(Stdio::null())
        .spawn()
        .unwrap()
}

#[test]
fn nginx_that_exits_is_not_taken_for_whoever_holds_its_port() {
    let dir = crate::target_dir().join("cluster-test-nginx");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    // A stranger holds the port; nginx cannot bind it and exits, saying why in its log.
    let stranger = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = stranger.local_addr().unwrap().port();
    let mut child = fake_nginx(
        &dir,
        "echo 'bind() to 127.0.0.1 failed (98: Address already in use)' > nginx-error.log; exit 1",
    );
    let e = wait_for_nginx(&mut child, port, &dir)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("nginx exited") && e.contains("Address already in use"),
        "{e}"
    );
    // The real one: its pid file names it and the port answers (this listener stands for
    // its socket).
    let mut child = fake_nginx(&dir, "echo $$ > nginx.pid; exec sleep 30");
    let waited = wait_for_nginx(&mut child, port, &dir);
    let _ = child.kill();
    let _ = child.wait();
    waited.unwrap();
    drop(stranger);
}
