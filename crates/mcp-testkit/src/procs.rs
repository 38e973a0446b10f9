//! The live processes of this machine as `/proc` shows them, for the load drivers that find
//! the process to kill by its program and arguments (`mcp-soak`, `mcp-cluster`). A zombie is
//! left out: PID 1 of a container may never reap it, and it is dead all the same.

/// One live process: its pid, its program's file name and its whole argument vector.
#[derive(Debug, Clone)]
pub struct Process {
    /// The process id.
    pub pid: u32,
    /// The last part of `argv[0]`.
    pub program: String,
    /// Every argument, `argv[0]` included.
    pub argv: Vec<String>,
}

impl Process {
    /// Whether `flag` is followed by `value` among the arguments.
    pub fn has(&self, flag: &str, value: &str) -> bool {
        self.argv.windows(2).any(|w| w[0] == flag && w[1] == value)
    }
}

/// The processes alive now, zombies left out; one that ends while it is read is skipped.
pub fn live() -> Vec<Process> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
            s.rsplit(')')
                .next()
                .is_some_and(|rest| rest.trim_start().starts_with('Z'))
        });
        if zombie {
            continue;
        }
        let argv: Vec<String> = cmdline
            .split(|b| *b == 0)
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect();
        let program = argv
            .first()
            .map(|p| p.rsplit('/').next().unwrap_or(p).to_owned())
            .unwrap_or_default();
        out.push(Process { pid, program, argv });
    }
    out
}
