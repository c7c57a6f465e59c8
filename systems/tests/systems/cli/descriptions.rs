//! A program's own systems (`zs_systems::cli::main_with`): descriptions that contradict each
//! other are refused before any argument is read, the options a system declares are parsed by
//! clap and reach its run, and a description's own error is one line with exit status 1 and
//! nothing written.

use clap::Arg;
use zs_systems::cli::{
    execute, positive_f64, CliError, CliSystem, EvalArgs, Failure, IntegratorName, Job, RunArgs,
    Systems,
};

use super::dir;

/// A system whose run reports the value of its `--knob` as its error (what it read), and
/// whose options are `options()`.
struct Tiny {
    name: &'static str,
    options: fn() -> Vec<Arg>,
}

fn knob() -> Vec<Arg> {
    vec![Arg::new("knob")
        .long("knob")
        .value_name("K")
        .value_parser(positive_f64)
        .help("A knob")]
}

fn none() -> Vec<Arg> {
    Vec::new()
}

impl CliSystem for Tiny {
    fn name(&self) -> &'static str {
        self.name
    }
    fn options(&self) -> Vec<Arg> {
        (self.options)()
    }
    fn defaults(&self, _: IntegratorName, _: f64) -> (f64, f64, f64) {
        (0.1, 1.0, 0.25)
    }
    fn run(&self, args: &RunArgs, _job: Job<'_>) -> Result<(), CliError> {
        Err(CliError::system(
            self.name,
            format!("knob {:?}", args.options.get::<f64>("knob")),
        ))
    }
    fn eval(&self, _: &EvalArgs) -> Result<String, CliError> {
        Err(CliError::system(self.name, "no eval"))
    }
}

fn tiny(name: &'static str, options: fn() -> Vec<Arg>) -> Box<dyn CliSystem> {
    Box::new(Tiny { name, options })
}

/// `Systems::new`'s message for `systems`, which must be refused.
fn refused(systems: Vec<Box<dyn CliSystem>>) -> String {
    match Systems::new(systems) {
        Ok(_) => panic!("contradictory descriptions were accepted"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn contradictory_descriptions_are_refused_with_one_line_naming_the_mistake() {
    let m = refused(vec![tiny("a", none), tiny("a", none)]);
    assert!(m.contains("the system name a is used twice"), "{m}");
    let m = refused(vec![tiny("a", || vec![Arg::new("h").long("h")])]);
    assert!(m.contains("--h of a clashes with zs run's own --h"), "{m}");
    let m = refused(vec![tiny(
        "a",
        || vec![Arg::new("threads").long("threads")],
    )]);
    assert!(m.contains("clashes"), "{m}");
    let m = refused(vec![tiny("a", || {
        vec![Arg::new("k").long("k"), Arg::new("k").long("k")]
    })]);
    assert!(m.contains("--k is declared twice by a"), "{m}");
    let m = refused(vec![
        tiny("a", knob),
        tiny("b", || vec![Arg::new("knob").long("knob").help("another")]),
    ]);
    assert!(
        m.contains("--knob is declared differently by a and b"),
        "{m}"
    );
    let m = refused(vec![tiny("a", || vec![Arg::new("k").long("kk")])]);
    assert!(m.contains("Arg::new(\"k\").long(\"k\")"), "{m}");
    let m = refused(vec![tiny("-a", none)]);
    assert!(m.contains("a name is a word"), "{m}");
    assert!(refused(Vec::new()).contains("no systems"));
    // Through the program: exit status 1 and the same line.
    let f = execute(vec![tiny("a", none), tiny("a", none)], ["p", "run", "a"]).unwrap_err();
    assert_eq!(f.status, 1);
    assert!(f.message.contains("used twice"), "{}", f.message);
    // Declared identically (one function), an option is shared.
    assert!(Systems::new(vec![tiny("a", knob), tiny("b", knob)]).is_ok());
}

#[test]
fn declared_options_are_parsed_and_reach_the_system_that_declares_them() {
    let d = dir("descriptions");
    let out = d.join("out/a.csv");
    let out = out.to_str().unwrap();
    let systems = || vec![tiny("a", knob), tiny("b", none)];
    // The value reaches the run (which reports it as its error: exit 1, one line, nothing
    // written).
    let f = execute(systems(), ["p", "run", "a", "--knob", "3", "--out", out]).unwrap_err();
    assert_eq!(
        f,
        Failure {
            message: "a: knob Some(3.0)".into(),
            status: 1
        }
    );
    let written: Vec<_> = walk(&d);
    assert!(written.is_empty(), "a failed set-up wrote {written:?}");
    // Given to a system that does not declare it: one line naming the systems that do.
    let f = execute(systems(), ["p", "run", "b", "--knob", "3"]).unwrap_err();
    assert_eq!(f.status, 1);
    assert_eq!(f.message, "--knob applies to a, not to b");
    // A value clap rejects: exit 2, the option named with what it takes.
    let f = execute(systems(), ["p", "run", "a", "--knob", "0"]).unwrap_err();
    assert_eq!(f.status, 2);
    assert!(
        f.message.contains("--knob") && f.message.contains("> 0"),
        "{}",
        f.message
    );
    // A system the program does not offer: exit 2 and the names it does.
    let f = execute(systems(), ["p", "run", "c"]).unwrap_err();
    assert_eq!(f.status, 2);
    assert!(f.message.contains("possible values: a, b"), "{}", f.message);
    // zs eval: options declared for run only are not eval's.
    let f = execute(systems(), ["p", "eval", "a", "--knob", "3"]).unwrap_err();
    assert_eq!(f.status, 2, "{}", f.message);
    let f = execute(systems(), ["p", "eval", "a"]).unwrap_err();
    assert_eq!(f.message, "a: no eval");
    // The ensemble and temper take run's options.
    let f = execute(
        systems(),
        [
            "p",
            "ensemble",
            "b",
            "--replicas",
            "2",
            "--out-dir",
            out,
            "--knob",
            "1",
        ],
    )
    .unwrap_err();
    assert_eq!(f.message, "--knob applies to a, not to b");
}

/// Every file under `d`.
fn walk(d: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for e in std::fs::read_dir(d).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            files.extend(walk(&p));
        } else {
            files.push(p);
        }
    }
    files
}
