use clap::{CommandFactory, FromArgMatches};
use gnnaudit::cli::Cli;

fn main() {
    // Before anything else: may re-execute the process so that libtorch's OpenMP sleeps when idle.
    gnnaudit::libtorch::passive_openmp_wait();
    // Before anything can print: closed pipes, full disks and libtorch failures end cleanly.
    gnnaudit::fatal::install_panic_hook();
    // The version line names the libtorch the binary runs on, known only at run time.
    let version: &'static str = Box::leak(gnnaudit::libtorch::version_line().into_boxed_str());
    let matches = Cli::command().version(version).get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    gnnaudit::cli::init_logging(cli.verbose);
    if cli.verbose == 0 {
        gnnaudit::libtorch::silence_warnings();
    }
    let result = gnnaudit::cli::run(cli);
    let flushed = gnnaudit::fatal::flush_stdout();
    if let Err(e) = result {
        eprintln!("error: {}", gnnaudit::error::humanize_numbers(&e.to_string()));
        std::process::exit(e.exit_code());
    }
    if let Some(code) = flushed {
        std::process::exit(code);
    }
}
