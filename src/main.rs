use clap::Parser;
use gnnaudit::cli::Cli;

fn main() {
    let cli = Cli::parse();
    gnnaudit::cli::init_logging(cli.verbose);
    if let Err(e) = gnnaudit::cli::run(cli) {
        eprintln!("error: {e}");
        std::process::exit(e.exit_code());
    }
}
