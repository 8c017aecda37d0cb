use clap::{CommandFactory, FromArgMatches};
use gnnaudit::cli::Cli;

fn main() {
    // Before anything else: may re-execute the process so that libtorch's OpenMP sleeps when idle.
    gnnaudit::libtorch::passive_openmp_wait();
    // The version line names the libtorch the binary runs on, known only at run time.
    let version: &'static str = Box::leak(gnnaudit::libtorch::version_line().into_boxed_str());
    let matches = Cli::command().version(version).get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    gnnaudit::cli::init_logging(cli.verbose);
    if cli.verbose == 0 {
        gnnaudit::libtorch::silence_warnings();
    }
    if let Err(e) = gnnaudit::cli::run(cli) {
        eprintln!("error: {e}");
        std::process::exit(e.exit_code());
    }
}
