//! The last line of defence between a failure and the user's terminal: no Rust panic message,
//! backtrace or C++ frame ever reaches stderr.
//!
//! - Output: `println!` panics when stdout is gone. A closed pipe (`gnnaudit ... | head`) ends the
//!   process quietly with exit 0, as `cat` or `ls` do; any other write error (`> /dev/full`) is an
//!   error naming the stream, exit 2. One hook covers every `println!` of every subcommand.
//! - libtorch: tch's infallible calls panic with libtorch's message, which carries C++ frames.
//!   An allocation failure is bad input (a size too large for this machine): exit 2, first line of
//!   the message only. Any other panic is a bug: one line naming where, exit 101.
use std::io::Write;

/// Exit code of a failed write to stdout/stderr (bad output target: the user's input).
pub const EXIT_OUTPUT: i32 = 2;

/// What a panic message means for the user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fatal {
    /// stdout's reader went away: stop quietly.
    ClosedPipe,
    /// stdout (or stderr) could not be written: the message names the stream.
    Output(String),
    /// libtorch (or the allocator) could not allocate what was asked: a size knob is too large.
    OutOfMemory(String),
    /// Anything else: a bug.
    Bug(String),
}

impl Fatal {
    /// Classifies a panic message (std's print macros say "failed printing to stdout: <io error>").
    pub fn classify(msg: &str) -> Fatal {
        for stream in ["stdout", "stderr"] {
            if let Some(err) = msg.strip_prefix(&format!("failed printing to {stream}: ")) {
                if err.contains("Broken pipe") || err.contains("os error 32") {
                    return Fatal::ClosedPipe;
                }
                return Fatal::Output(format!("cannot write to {stream}: {err}"));
            }
        }
        // Writers other than print! (e.g. clap_complete's) panic with the io::Error's Debug form.
        if msg.contains("BrokenPipe") || msg.contains("Broken pipe") {
            return Fatal::ClosedPipe;
        }
        if msg.contains("StorageFull") || msg.contains("No space left on device") {
            return Fatal::Output(format!("cannot write the output: {}", first_line(msg)));
        }
        let first = first_line(msg);
        if msg.contains("can't allocate memory") || msg.contains("DefaultCPUAllocator") {
            return Fatal::OutOfMemory(first);
        }
        Fatal::Bug(first)
    }

    pub fn exit_code(&self) -> i32 {
        match self {
            Fatal::ClosedPipe => 0,
            Fatal::Output(_) | Fatal::OutOfMemory(_) => EXIT_OUTPUT,
            Fatal::Bug(_) => 101,
        }
    }
}

/// The first meaningful line of a (libtorch) message: no "Exception raised from" or frame lines.
pub fn first_line(msg: &str) -> String {
    let mut line = msg.trim_start_matches("called `Result::unwrap()` on an `Err` value: ").trim_start();
    line = line.trim_start_matches("Torch(\"");
    for sep in ["\\n", "\n", "Exception raised from", "frame #"] {
        if let Some(i) = line.find(sep) {
            line = &line[..i];
        }
    }
    line.trim_matches(|c: char| c == '"' || c == ' ').to_string()
}

/// Installs the hook; call first thing in `main`.
pub fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        let payload = info.payload();
        let msg = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        let fatal = Fatal::classify(&msg);
        let mut err = std::io::stderr().lock();
        let _ = match &fatal {
            Fatal::ClosedPipe => Ok(()),
            Fatal::Output(m) => writeln!(err, "error: {m}"),
            Fatal::OutOfMemory(m) => writeln!(
                err,
                "error: not enough memory: {m}\n(a size is too large for this machine: lower --hidden, \
                 --batch-size, the number of layers, or the dataset's size)"
            ),
            Fatal::Bug(m) => {
                let at = info.location().map(|l| format!(" at {}:{}", l.file(), l.line())).unwrap_or_default();
                writeln!(err, "error: internal error{at}: {m}\n(this is a bug in gnnaudit; please report it)")
            }
        };
        std::process::exit(fatal.exit_code());
    }));
}

/// Flushes stdout at the end of a run: a failure there is as real as one in `println!` (Rust
/// drops flush errors at exit). Returns the exit code to use, if the flush failed.
pub fn flush_stdout() -> Option<i32> {
    match std::io::stdout().flush() {
        Ok(()) => None,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Some(0),
        Err(e) => {
            eprintln!("error: cannot write to stdout: {e}");
            Some(EXIT_OUTPUT)
        }
    }
}

/// Ends a binary's run with its result: stdout flushed, the error (numbers humanised) on stderr
/// with its exit code, through `quick_exit` so that no libtorch destructor runs after it.
pub fn exit_with(result: crate::error::Result<()>) -> ! {
    let flushed = flush_stdout();
    if let Err(e) = result {
        eprintln!("error: {}", crate::error::humanize_numbers(&e.to_string()));
        crate::libtorch::quick_exit(e.exit_code());
    }
    crate::libtorch::quick_exit(flushed.unwrap_or(0))
}

/// What `clap::Error::exit` does (help and version on stdout, usage errors on stderr, exit 0 or
/// 2), ending through `quick_exit` like every other run.
pub fn clap_exit(e: clap::Error) -> ! {
    let _ = e.print();
    let flushed = flush_stdout();
    crate::libtorch::quick_exit(flushed.unwrap_or(e.exit_code()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panic_messages_are_classified() {
        assert_eq!(Fatal::classify("failed printing to stdout: Broken pipe (os error 32)"), Fatal::ClosedPipe);
        assert_eq!(
            Fatal::classify("failed printing to stdout: No space left on device (os error 28)"),
            Fatal::Output("cannot write to stdout: No space left on device (os error 28)".into())
        );
        let torch = "called `Result::unwrap()` on an `Err` value: Torch(\"[enforce fail at alloc_cpu.cpp:117] \
                     data. DefaultCPUAllocator: not enough memory: you tried to allocate 5 bytes.\\nframe #0: c10\")";
        match Fatal::classify(torch) {
            Fatal::OutOfMemory(m) => assert!(m.starts_with("[enforce fail") && !m.contains("frame #"), "{m}"),
            other => panic!("{other:?}"),
        }
    }
}
