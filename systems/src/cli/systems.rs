//! The systems a `zs` program offers ([`Systems`]): the descriptions given to
//! [`main_with`](super::main_with), checked once, and the command line they make — the
//! `<SYSTEM>` argument of every subcommand takes their names ([`SystemArg`]), and the options
//! they declare ([`CliSystem::options`], [`CliSystem::eval_options`],
//! [`CliSystem::nma_options`]) join the subcommands,
//! parsed by clap and read back through [`SystemOptions`].
//!
//! An option several systems declare is one option: they must declare it identically (one
//! shared function, as `--gravity` for the pendula). An option given to a system that does not
//! declare it is a one-line error naming the systems it applies to.

use std::fmt;

use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser, ValueParserFactory};
use clap::parser::ValueSource;
use clap::{Arg, ArgMatches, CommandFactory};

use super::error::CliError;
use super::system::CliSystem;
use super::Cli;

/// The subcommands whose `<SYSTEM>` argument names a system.
const SYSTEM_COMMANDS: [&str; 5] = ["run", "eval", "nma", "ensemble", "temper"];
/// The subcommands that take the options of `zs run` (and so the systems' [`CliSystem::options`]).
const RUN_COMMANDS: [&str; 3] = ["run", "ensemble", "temper"];

/// An option declared by one or more systems.
pub(crate) struct Declared {
    /// The option (its id is its long name).
    pub arg: Arg,
    /// The systems declaring it, in the order given.
    pub by: Vec<&'static str>,
}

impl Declared {
    /// `--name`.
    pub(crate) fn flag(&self) -> String {
        format!("--{}", self.arg.get_id())
    }
}

/// The systems of a program, checked (see the [module docs](self)).
pub struct Systems {
    list: Vec<&'static dyn CliSystem>,
    run_options: Vec<Declared>,
    eval_options: Vec<Declared>,
    nma_options: Vec<Declared>,
}

/// What is wrong with the descriptions given to [`main_with`](super::main_with): a mistake of
/// the program's author, reported before any argument is read.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct DescriptionError(String);

impl Systems {
    /// Check `descriptions` and keep them for the life of the program (a program's systems
    /// are made once, in `main`).
    ///
    /// # Errors
    /// No system, a name used twice or not a plain word, an option without a long name,
    /// declared twice by one system, declared differently by two, or clashing with an option
    /// of the subcommand itself.
    pub fn new(
        descriptions: Vec<Box<dyn CliSystem>>,
    ) -> Result<&'static Systems, DescriptionError> {
        let fail = |m: String| Err(DescriptionError(m));
        if descriptions.is_empty() {
            return fail("no systems were given to main_with".into());
        }
        let list: Vec<&'static dyn CliSystem> =
            descriptions.into_iter().map(|d| &*Box::leak(d)).collect();
        for (k, s) in list.iter().enumerate() {
            let name = s.name();
            if name.is_empty()
                || name.starts_with('-')
                || !name
                    .chars()
                    .all(|c| c.is_alphanumeric() || "-_.".contains(c))
            {
                return fail(format!(
                    "system name {name:?}: a name is a word of letters, digits, '-', '_' and '.', not starting with '-'"
                ));
            }
            if list[..k].iter().any(|o| o.name() == name) {
                return fail(format!("the system name {name} is used twice"));
            }
        }
        let command = Cli::command();
        let builtin = |sub: &str| -> Vec<String> {
            let c = command.find_subcommand(sub).expect("the subcommands of zs");
            c.get_arguments()
                .flat_map(|a| {
                    [
                        Some(a.get_id().to_string()),
                        a.get_long().map(str::to_string),
                    ]
                })
                .flatten()
                .chain(["help".to_string(), "version".to_string()])
                .collect()
        };
        let run_builtin: Vec<String> = RUN_COMMANDS.iter().flat_map(|c| builtin(c)).collect();
        let run_options = declared(&list, |s| s.options(), "zs run", &run_builtin)?;
        let eval_options = declared(&list, |s| s.eval_options(), "zs eval", &builtin("eval"))?;
        let nma_options = declared(&list, |s| s.nma_options(), "zs nma", &builtin("nma"))?;
        Ok(Box::leak(Box::new(Systems {
            list,
            run_options,
            eval_options,
            nma_options,
        })))
    }

    /// The systems, in the order given.
    pub fn iter(&self) -> impl Iterator<Item = &'static dyn CliSystem> + '_ {
        self.list.iter().copied()
    }

    /// The system named `name`.
    pub fn find(&self, name: &str) -> Option<&'static dyn CliSystem> {
        self.iter().find(|s| s.name() == name)
    }

    /// "chain, dna and water": the systems for which `has` holds.
    pub(crate) fn which(&self, has: impl Fn(&dyn CliSystem) -> bool) -> String {
        and_list(self.iter().filter(|s| has(*s)).map(|s| s.name()).collect())
    }

    /// The options of `zs run` the systems declare.
    pub(crate) fn run_options(&self) -> &[Declared] {
        &self.run_options
    }

    /// The command line of a program offering these systems: `zs`'s, whose `<SYSTEM>`
    /// arguments take their names and whose subcommands take their declared options.
    pub(crate) fn command(&'static self) -> clap::Command {
        let values: Vec<PossibleValue> = self
            .iter()
            .map(|s| PossibleValue::new(s.name()).help(s.about()))
            .collect();
        let parser = PossibleValuesParser::new(values).map(move |name: String| SystemArg {
            chosen: self.find(&name).expect("a name clap accepted"),
            all: self,
        });
        let mut command = Cli::command();
        for sub in SYSTEM_COMMANDS {
            let parser = parser.clone();
            command = command.mut_subcommand(sub, |c| {
                let mut c = c.mut_arg("system", |a| a.value_parser(parser));
                let options = match sub {
                    "eval" => &self.eval_options[..],
                    "nma" => &self.nma_options[..],
                    s if RUN_COMMANDS.contains(&s) => &self.run_options[..],
                    _ => &[],
                };
                for d in options {
                    c = c.arg(d.arg.clone());
                }
                c
            });
        }
        command
    }
}

/// The options `options` of every system declares, one per name: a clash with `builtin` (the
/// subcommand's own ids and long names), an option declared twice by one system or differently
/// by two, or one without a long name (its id) is an error.
fn declared(
    list: &[&'static dyn CliSystem],
    options: impl Fn(&dyn CliSystem) -> Vec<Arg>,
    command: &str,
    builtin: &[String],
) -> Result<Vec<Declared>, DescriptionError> {
    let mut out: Vec<Declared> = Vec::new();
    for &s in list {
        let name = s.name();
        let mut mine: Vec<String> = Vec::new();
        for arg in options(s) {
            let id = arg.get_id().to_string();
            if arg.get_long() != Some(id.as_str()) || arg.get_short().is_some() {
                return Err(DescriptionError(format!(
                    "{command} option {id:?} of {name}: declare it as Arg::new(\"{id}\").long(\"{id}\"), without a short name"
                )));
            }
            if builtin.contains(&id) {
                return Err(DescriptionError(format!(
                    "{command} option --{id} of {name} clashes with {command}'s own --{id}"
                )));
            }
            if mine.contains(&id) {
                return Err(DescriptionError(format!(
                    "{command} option --{id} is declared twice by {name}"
                )));
            }
            mine.push(id.clone());
            match out.iter_mut().find(|d| d.arg.get_id() == id.as_str()) {
                Some(d) if format!("{:?}", d.arg) != format!("{arg:?}") => {
                    return Err(DescriptionError(format!(
                        "{command} option --{id} is declared differently by {} and {name}: declare it in one function both call, or give it another name",
                        d.by[0]
                    )));
                }
                Some(d) => d.by.push(name),
                None => out.push(Declared {
                    arg,
                    by: vec![name],
                }),
            }
        }
    }
    Ok(out)
}

/// "a", "a and b", "a, b and c".
pub(crate) fn and_list(names: Vec<&str>) -> String {
    match names.split_last() {
        None => String::new(),
        Some((last, [])) => (*last).to_string(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
    }
}

/// The `<SYSTEM>` argument of a subcommand: the system chosen, among the program's.
#[derive(Clone, Copy)]
pub struct SystemArg {
    chosen: &'static dyn CliSystem,
    all: &'static Systems,
}

impl SystemArg {
    /// The system's description.
    pub fn get(&self) -> &'static dyn CliSystem {
        self.chosen
    }
    /// Its command-line name.
    pub fn name(&self) -> &'static str {
        self.chosen.name()
    }
    /// Every system of the program.
    pub fn all(&self) -> &'static Systems {
        self.all
    }
}

impl fmt::Debug for SystemArg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl ValueParserFactory for SystemArg {
    type Parser = fn(&str) -> Result<SystemArg, String>;
    /// The parser of a command line made without the program's systems: no system is known.
    fn value_parser() -> Self::Parser {
        |name| Err(format!("no system {name}: the program offers none"))
    }
}

/// The values of the options the systems declared ([`CliSystem::options`]), as clap parsed
/// them: read with [`SystemOptions::get`] and [`SystemOptions::flag`] under the option's long
/// name.
#[derive(Clone, Debug, Default)]
pub struct SystemOptions(ArgMatches);

impl SystemOptions {
    pub(crate) fn new(matches: ArgMatches) -> Self {
        SystemOptions(matches)
    }

    /// The value of `--id` (given, or its default), `None` when absent or not declared.
    pub fn get<T: Clone + Send + Sync + 'static>(&self, id: &str) -> Option<T> {
        self.0.try_get_one::<T>(id).ok().flatten().cloned()
    }

    /// True when the flag `--id` was given.
    pub fn flag(&self, id: &str) -> bool {
        self.get::<bool>(id).unwrap_or(false)
    }

    /// True when `--id` was written on the command line (not a default).
    pub fn given(&self, id: &str) -> bool {
        matches!(
            self.0
                .try_contains_id(id)
                .ok()
                .and_then(|_| self.0.value_source(id)),
            Some(ValueSource::CommandLine)
        )
    }

    /// `--id`'s values as written (or its default), for the checkpoint's record of the run.
    pub(crate) fn raw(&self, id: &str) -> Option<String> {
        let values = self.0.try_get_raw(id).ok().flatten()?;
        Some(
            values
                .map(|v| v.to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join(" "),
        )
    }

    /// Every option of `declared` given on the command line applies to `system`.
    ///
    /// # Errors
    /// The first that does not, naming the systems it applies to.
    pub(crate) fn check(&self, declared: &[Declared], system: &str) -> Result<(), CliError> {
        for d in declared {
            if !d.by.contains(&system) && self.given(d.arg.get_id().as_str()) {
                return Err(CliError::applies_only_to(
                    d.flag(),
                    and_list(d.by.clone()),
                    system,
                ));
            }
        }
        Ok(())
    }
}

/// `check` of `zs eval`'s declared options.
pub(crate) fn check_eval(args: &super::EvalArgs) -> Result<(), CliError> {
    args.options
        .check(&args.system.all().eval_options, args.system.name())
}

#[cfg(feature = "faer")]
/// `check` of `zs nma`'s declared options.
pub(crate) fn check_nma(args: &super::NmaArgs) -> Result<(), CliError> {
    args.options
        .check(&args.system.all().nma_options, args.system.name())
}
