//! `cargo xtask keyring`: the Secret Service backend for real. Debian's gnome-keyring
//! (installed with apt-get when missing) on a session bus of its own (`dbus-run-session`),
//! its login keyring created and unlocked with a throwaway password; then, on that bus,
//! mcp-host's keyring tests (`MCP_HOST_TEST_KEYRING=secret-service`: secrets, a
//! `{"keyring": …}` reference, OAuth tokens refreshed by two contexts at once) and the built
//! `mcp-host secret` commands, with no `MCP_HOST_KEYRING` (the Secret Service must be the
//! keyring chosen when it answers). Seconds, once built. The kernel keyring needs no bus: the
//! ordinary tests use it.

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use xshell::{Shell, cmd};

/// The leg, from `ci` or on its own.
pub(crate) fn run(sh: &Shell) -> anyhow::Result<()> {
    let daemon = gnome_keyring(sh)?;
    eprintln!("==> keyring: building mcp-host and its keyring tests");
    let debug = crate::binaries::build(sh)?;
    cmd!(sh, "cargo test --quiet -p mcp-host --test keyring --no-run").run()?;
    let dir = crate::target_dir().join("xtask-keyring");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("home"))?;
    let script = dir.join("session.sh");
    std::fs::write(&script, SESSION)?;
    let mcp_host = debug.join("mcp-host");
    // The daemon and mcp-host get a HOME of their own (the keyring files, the configuration);
    // cargo keeps the real one, where its registry and toolchains are.
    let _home = sh.push_env("LEG_HOME", dir.join("home"));
    let _bin = sh.push_env("MCP_HOST_BIN", &mcp_host);
    let _daemon = sh.push_env("GNOME_KEYRING_DAEMON", &daemon);
    let _no_forced = sh.push_env("MCP_HOST_KEYRING", "");
    cmd!(sh, "dbus-run-session -- sh {script}")
        .run()
        .context("the Secret Service leg failed (its output is above)")?;
    eprintln!(
        "==> keyring: the Secret Service kept, listed, resolved and removed secrets and OAuth tokens"
    );
    Ok(())
}

/// Debian's gnome-keyring-daemon: the installed one, else installed now with apt-get (as
/// root on Debian, as the login leg installs chromium).
fn gnome_keyring(sh: &Shell) -> anyhow::Result<PathBuf> {
    let path = Path::new("/usr/bin/gnome-keyring-daemon");
    if path.exists() && Path::new("/usr/bin/dbus-run-session").exists() {
        return Ok(path.to_path_buf());
    }
    eprintln!("==> installing gnome-keyring and dbus with apt-get (the Secret Service leg)");
    let _frontend = sh.push_env("DEBIAN_FRONTEND", "noninteractive");
    let wait = ["-o", "DPkg::Lock::Timeout=300"];
    let packages = ["gnome-keyring", "dbus-daemon", "dbus-bin"];
    if cmd!(
        sh,
        "apt-get install -y --no-install-recommends {wait...} {packages...}"
    )
    .run()
    .is_err()
    {
        cmd!(sh, "apt-get update {wait...}")
            .run()
            .context("apt-get update failed: gnome-keyring cannot be installed")?;
        cmd!(
            sh,
            "apt-get install -y --no-install-recommends {wait...} {packages...}"
        )
        .run()
        .context("apt-get could not install gnome-keyring (run as root on Debian)")?;
    }
    anyhow::ensure!(
        path.exists(),
        "apt-get installed gnome-keyring, but {} is missing",
        path.display()
    );
    Ok(path.to_path_buf())
}

/// What runs on the session bus. The daemon it starts is its own child, ended by its id on
/// the way out.
const SESSION: &str = r#"set -eu
fail() { echo "keyring leg: $*" >&2; exit 1; }
# The login keyring, created and unlocked with a throwaway password read from stdin.
printf 'xtask-throwaway' | HOME="$LEG_HOME" XDG_DATA_HOME="$LEG_HOME/.local/share" \
  XDG_RUNTIME_DIR="$LEG_HOME" "$GNOME_KEYRING_DAEMON" --foreground --unlock --components=secrets >/dev/null 2>&1 &
daemon=$!
trap 'kill "$daemon" 2>/dev/null || true' EXIT
i=0
until dbus-send --session --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus \
    org.freedesktop.DBus.NameHasOwner string:org.freedesktop.secrets 2>/dev/null | grep -q 'boolean true'; do
  i=$((i+1)); [ "$i" -lt 100 ] || fail "gnome-keyring did not take org.freedesktop.secrets within 10 s"
  sleep 0.1
done
# mcp-host's own tests, against the Secret Service.
MCP_HOST_TEST_KEYRING=secret-service cargo test --quiet -p mcp-host --test keyring -- \
  --skip a_kernel_keyring_entry_is_opened_to_its_owner_only
# The command line, choosing the keyring itself: the Secret Service answers, so it is taken.
export HOME="$LEG_HOME" XDG_CONFIG_HOME="$LEG_HOME/.config"
name="xtask-ss-$$"
out=$(printf 'ss-planted-value\n' | "$MCP_HOST_BIN" secret set "$name" 2>&1) || fail "secret set: $out"
case "$out" in *secret-service*) ;; *) fail "secret set did not use the Secret Service: $out";; esac
"$MCP_HOST_BIN" secret list | grep -qx "$name" || fail "secret list does not name $name"
shown=$("$MCP_HOST_BIN" secret get "$name")
case "$shown" in *ss-planted-value*) fail "secret get showed the value without --reveal";; esac
[ "$("$MCP_HOST_BIN" secret get "$name" --reveal)" = "ss-planted-value" ] || fail "secret get --reveal"
"$MCP_HOST_BIN" secret rm "$name" >/dev/null 2>&1 || fail "secret rm"
if "$MCP_HOST_BIN" secret get "$name" >/dev/null 2>&1; then fail "removed, yet still there"; fi
echo "keyring leg: the Secret Service passed" >&2
"#;
