//! `zs`: run the source papers' systems from the command line (see [`zs_systems::cli`]).

fn main() -> std::process::ExitCode {
    zs_systems::cli::main()
}
