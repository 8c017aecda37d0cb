use clap::{CommandFactory, FromArgMatches};
use gnnaudit::cli::Cli;

fn main() {
    // Before anything else: may re-execute the process so that libtorch's OpenMP sleeps when idle.
    gnnaudit::libtorch::passive_openmp_wait();
    // Before anything can print: closed pipes, full disks and libtorch failures end cleanly.
    gnnaudit::fatal::install_panic_hook();
    // The version line names the libtorch the binary runs on, known only at run time.
    let version: &'static str = Box::leak(gnnaudit::libtorch::version_line().into_boxed_str());
    let matches = Cli::command().version(version).try_get_matches().unwrap_or_else(|e| gnnaudit::fatal::clap_exit(e));
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| gnnaudit::fatal::clap_exit(e));
    gnnaudit::cli::init_logging(cli.verbose);
    if cli.verbose == 0 {
        gnnaudit::libtorch::silence_warnings();
    }
    // `run` has dropped (closed) everything it opened by the time it returns.
    let result = gnnaudit::cli::run(cli);
    gnnaudit::fatal::exit_with(result)
}
