//! Ctrl-C (SIGINT) and SIGTERM during an audit or an attack: say what was kept and how to resume,
//! remove this process's claims on unfinished cells, stop its `--jobs` workers, kill the process
//! groups of running training commands, remove their temporary folders, and exit 130 / 143.
//! A [`Deadline`] does the same cleanup when work that cannot be cancelled (a TorchScript
//! forward) outlives its timeout, and exits 2.
//!
//! The signals are blocked in the thread that calls `install` (before any other thread exists,
//! so every later thread, libtorch's included, inherits the mask) and a dedicated thread waits
//! for them with `sigwait`: the message is then printed by ordinary code, not inside a signal
//! handler. Child processes start with an empty mask (Rust's `Command` resets it).
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

struct State {
    /// Printed on interruption (e.g. the resume command); None: quiet (a `--jobs` worker).
    message: Option<Arc<dyn Fn() -> String + Send + Sync>>,
    /// Claim files of cells this process is computing.
    claims: Vec<PathBuf>,
    /// `--jobs` worker processes to stop.
    children: Vec<u32>,
    /// Process groups of running training commands, killed whole.
    groups: Vec<u32>,
    /// Temporary folders to remove (the process ends without running destructors).
    temp_dirs: Vec<PathBuf>,
    /// The report folder, once resolved.
    folder: Option<PathBuf>,
    /// Set by the cleanup: nothing may start after it has run.
    stopping: bool,
}

static STATE: Mutex<State> = Mutex::new(State {
    message: None,
    claims: vec![],
    children: vec![],
    groups: vec![],
    temp_dirs: vec![],
    folder: None,
    stopping: false,
});

fn state() -> std::sync::MutexGuard<'static, State> {
    STATE.lock().unwrap_or_else(|p| p.into_inner())
}

/// Blocks SIGINT and SIGTERM in the calling thread and starts the thread that handles them.
/// Call once, early in `main`'s thread, before libtorch starts its thread pool.
pub fn install() {
    // SAFETY: plain libc calls on a local signal set; no handler is installed.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGINT);
        libc::sigaddset(&mut set, libc::SIGTERM);
        if libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) != 0 {
            return;
        }
        let waiting = set;
        std::thread::spawn(move || loop {
            let mut sig: libc::c_int = 0;
            if libc::sigwait(&waiting, &mut sig) == 0 {
                on_signal(sig);
            }
        });
    }
}

fn on_signal(sig: libc::c_int) -> ! {
    let message = stop_everything();
    if let Some(m) = message {
        let what = if sig == libc::SIGINT { "interrupted (Ctrl-C)" } else { "terminated (SIGTERM)" };
        eprintln!("\n{what}: {}", m());
    }
    // _exit: no C++ static destructors while libtorch's threads are still computing.
    // SAFETY: ends the process; stderr is unbuffered, so the message is out.
    unsafe { libc::_exit(128 + sig) }
}

/// Stops the workers and training commands, removes claims and temporary folders, and returns
/// the interruption message (if any) for the caller to print before it exits.
fn stop_everything() -> Option<Arc<dyn Fn() -> String + Send + Sync>> {
    let mut st = state();
    st.stopping = true;
    for &pid in &st.children {
        // SAFETY: sends a signal to a child this process started.
        unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) };
    }
    for &group in &st.groups {
        // SAFETY: kills a process group this process created (a training command's).
        unsafe { libc::kill(-(group as libc::pid_t), libc::SIGKILL) };
    }
    for c in &st.claims {
        let _ = std::fs::remove_file(c);
    }
    for d in &st.temp_dirs {
        let _ = std::fs::remove_dir_all(d);
    }
    // The message reads the state (the folder) itself: returned, printed after the lock.
    st.message.clone()
}

/// Exit code when a [`Deadline`] passes: the limit is the user's input (a timeout too short, or
/// a module that never returns), as for a training command that times out.
pub const EXIT_DEADLINE: i32 = 2;

/// A limit on work that cannot be cancelled from outside, such as a TorchScript forward running
/// inside libtorch: while the guard lives, a watchdog thread waits; if `limit` passes first, the
/// process stops everything it started (as on Ctrl-C), prints `error: <message>` and exits
/// [`EXIT_DEADLINE`]. Dropping the guard disarms it.
pub struct Deadline {
    done: Arc<(Mutex<bool>, std::sync::Condvar)>,
}

/// Arms a [`Deadline`] of `limit`; `message` is formed only if it passes.
pub fn deadline(limit: std::time::Duration, message: impl FnOnce() -> String + Send + 'static) -> Deadline {
    let done = Arc::new((Mutex::new(false), std::sync::Condvar::new()));
    let watched = Arc::clone(&done);
    std::thread::spawn(move || {
        let (lock, cvar) = &*watched;
        let guard = lock.lock().unwrap_or_else(|p| p.into_inner());
        let (finished, _) = cvar.wait_timeout_while(guard, limit, |d| !*d).unwrap_or_else(|p| p.into_inner());
        if !*finished {
            let interrupted = stop_everything();
            eprintln!("error: {}", message());
            if let Some(m) = interrupted {
                eprintln!("{}", m());
            }
            // SAFETY: ends the process as `on_signal` does (libtorch is still computing).
            unsafe { libc::_exit(EXIT_DEADLINE) }
        }
    });
    Deadline { done }
}

impl Drop for Deadline {
    fn drop(&mut self) {
        let (lock, cvar) = &*self.done;
        *lock.lock().unwrap_or_else(|p| p.into_inner()) = true;
        cvar.notify_one();
    }
}

/// What to print when interrupted (evaluated then, so that it can count the stored cells).
pub fn set_message(f: impl Fn() -> String + Send + Sync + 'static) {
    state().message = Some(Arc::new(f));
}

/// The report folder this process works in (for the message).
pub fn set_folder(dir: &Path) {
    state().folder = Some(dir.to_path_buf());
}

pub fn folder() -> Option<PathBuf> {
    state().folder.clone()
}

pub fn track(claim: PathBuf) {
    state().claims.push(claim);
}

pub fn untrack(claim: &Path) {
    state().claims.retain(|c| c != claim);
}

/// Starts a `--jobs` worker, registered to be stopped on interruption.
pub fn spawn_child(command: &mut std::process::Command) -> std::io::Result<std::process::Child> {
    spawn_registered(command, |st| &mut st.children)
}

pub fn remove_child(pid: u32) {
    state().children.retain(|&c| c != pid);
}

/// Starts a training command as the leader of a process group of its own, registered so that a
/// timeout or Ctrl-C kills the whole pipeline.
pub fn spawn_process_group(command: &mut std::process::Command) -> std::io::Result<std::process::Child> {
    std::os::unix::process::CommandExt::process_group(command, 0);
    spawn_registered(command, |st| &mut st.groups)
}

/// Spawns `command` and records its pid in the list `into` picks. The lock is held across the
/// spawn, so a signal that arrives meanwhile waits for the record and then stops the new process;
/// after the cleanup has run (it sets `stopping`, then the process exits) nothing starts.
fn spawn_registered(
    command: &mut std::process::Command,
    into: impl FnOnce(&mut State) -> &mut Vec<u32>,
) -> std::io::Result<std::process::Child> {
    let mut st = state();
    if st.stopping {
        return Err(std::io::Error::new(std::io::ErrorKind::Interrupted, "the process is stopping"));
    }
    let child = command.spawn()?;
    into(&mut st).push(child.id());
    Ok(child)
}

pub fn remove_process_group(group: u32) {
    state().groups.retain(|&g| g != group);
}

/// Removes `dir` if the process is interrupted (a temporary folder whose owner will not get to
/// drop it).
pub fn remove_on_interrupt(dir: &Path) {
    state().temp_dirs.push(dir.to_path_buf());
}

pub fn forget_temp_dir(dir: &Path) {
    state().temp_dirs.retain(|d| d != dir);
}

/// Makes the calling process receive SIGTERM when its parent dies (the audit's `--jobs`
/// workers: a parent killed with SIGKILL cannot stop them itself). Called in the child between
/// fork and exec with the parent's pid taken before the fork; async-signal-safe.
pub fn die_with_parent(parent: libc::pid_t) -> std::io::Result<()> {
    // SAFETY: prctl and getppid with integer arguments only.
    unsafe {
        if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        // The parent died before the request took effect: nobody will signal us.
        if libc::getppid() != parent {
            libc::_exit(128 + libc::SIGTERM);
        }
    }
    Ok(())
}

/// Asks whether the user asked to stop (true: stop). Registered by a host that cannot let a
/// signal end the process, such as the Python package, whose Ctrl-C must become
/// `KeyboardInterrupt` in the caller.
pub type Poll = Arc<dyn Fn() -> bool + Send + Sync>;

static POLL: Mutex<Option<Poll>> = Mutex::new(None);
static POLLING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Registers (Some) or removes (None) the poll that [`check`] calls, and returns the one it
/// replaces (for a nested host call to put back). The CLI registers none: its signal thread ends
/// the process, and `check` is then a single atomic load.
pub fn set_poll(poll: Option<Poll>) -> Option<Poll> {
    let mut slot = POLL.lock().unwrap_or_else(|p| p.into_inner());
    POLLING.store(poll.is_some(), std::sync::atomic::Ordering::SeqCst);
    std::mem::replace(&mut *slot, poll)
}

/// Called between steps of long loops (training epochs): `Err(Interrupted)` once the registered
/// poll says the user asked to stop, so the work unwinds through ordinary error paths.
pub fn check() -> crate::error::Result<()> {
    if !POLLING.load(std::sync::atomic::Ordering::Relaxed) {
        return Ok(());
    }
    // Cloned out of the lock: the poll may take a while (it takes Python's GIL).
    let poll = POLL.lock().unwrap_or_else(|p| p.into_inner()).clone();
    match poll {
        Some(p) if p() => Err(crate::error::Error::Interrupted),
        _ => Ok(()),
    }
}
