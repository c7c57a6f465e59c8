//! Property tests of the whole expansion on bad input: random token soups, random
//! token-level mutations of a valid definition, and a template whose slots are each filled
//! with a valid choice or a known mistake. `expand` must never panic (a panic inside a proc
//! macro is an unhelpful "proc macro panicked" at the attribute), never report an internal
//! error, and must either report at least one `compile_error!` or emit the complete set of
//! trait impls. Where the input is known to be invalid (it does not parse as an `impl` block,
//! or a slot holds a mistake), a `compile_error!` is required; where it is known to be valid, it
//! is forbidden.
//!
//! The libFuzzer target `fuzz/fuzz_targets/parse.rs` explores arbitrary bytes much longer; this
//! is its fast, default-run counterpart.

use std::str::FromStr;

use proc_macro2::TokenStream;
use proptest::prelude::*;

use crate::expand::expand;

/// What an expansion produced.
struct Outcome {
    errors: usize,
    text: String,
}

/// Runs the macro on `source` (which must lex), checking the invariants that hold for every
/// input.
fn run(source: &str) -> Outcome {
    let item = TokenStream::from_str(source).expect("the test builds lexable input");
    let out = expand(TokenStream::new(), item);
    let text = out.to_string();
    let errors = text.matches("compile_error").count();
    assert!(
        !text.contains("internal error"),
        "internal error for input\n{source}\n---\n{text}"
    );
    if errors == 0 {
        // Success: the complete expansion, as valid items.
        let file: syn::File = syn::parse2(out)
            .unwrap_or_else(|e| panic!("expansion does not parse ({e}) for\n{source}"));
        let traits: Vec<String> = file
            .items
            .iter()
            .filter_map(|it| match it {
                syn::Item::Impl(i) => i.trait_.as_ref().map(|(p, _)| {
                    p.segments
                        .last()
                        .map(|s| s.ident.to_string())
                        .unwrap_or_default()
                }),
                _ => None,
            })
            .collect();
        for t in [
            "Potential",
            "StiffSplit",
            "MechanicalSystem",
            "ConstraintCurvature",
        ] {
            assert!(
                traits.iter().any(|x| x == t),
                "no `{t}` impl without an error for\n{source}\n---\n{text}"
            );
        }
    }
    Outcome { errors, text }
}

/// Whether the input is an `impl` block at all (if not, an error is certain).
fn parses_as_impl(source: &str) -> bool {
    TokenStream::from_str(source)
        .ok()
        .and_then(|ts| syn::parse2::<syn::ItemImpl>(ts).ok())
        .is_some()
}

// ------------------------------------------------------------------ token soups

const VOCABULARY: &[&str] = &[
    "q",
    "self",
    "potential",
    "constraints",
    "masses",
    "stiff_potential",
    "helper",
    "S",
    "fn",
    "let",
    "mut",
    "for",
    "in",
    "if",
    "else",
    "match",
    "return",
    "impl",
    "f64",
    "usize",
    "const",
    "sin",
    "powi",
    "abs",
    "sqrt",
    "as",
    "+",
    "-",
    "*",
    "/",
    "%",
    "=",
    "+=",
    ";",
    ":",
    ",",
    ".",
    "&",
    "->",
    "..",
    "..=",
    "<",
    ">",
    "==",
    "!",
    "_",
    "=>",
    "::",
    "0",
    "1",
    "2",
    "3",
    "100",
    "0.5",
    "2.0",
    "1e300",
    "true",
    "[f64; 2]",
    "&[f64; 2]",
    "q[0]",
    "q[1]",
    "q[5]",
    "x",
];

/// A random token sequence with balanced delimiters (depth ≤ 4).
fn soup() -> impl Strategy<Value = String> {
    let leaf = prop::sample::select(VOCABULARY).prop_map(str::to_string);
    leaf.prop_recursive(4, 48, 6, |inner| {
        (
            prop::collection::vec(inner, 0..6),
            prop::sample::select(&["()", "[]", "{}", ""][..]),
        )
            .prop_map(|(items, delims)| {
                let body = items.join(" ");
                match delims {
                    "" => body,
                    d => format!("{}{body}{}", &d[..1], &d[1..]),
                }
            })
    })
}

// ------------------------------------------------------------------ the template

/// One slot of [`TEMPLATE`]: the valid choice first, then mistakes.
struct Slot {
    name: &'static str,
    choices: &'static [&'static str],
}

const SLOTS: &[Slot] = &[
    Slot {
        name: "POTENTIAL",
        choices: &["potential", "potental"],
    },
    Slot {
        name: "RET",
        choices: &["f64", "f32", "[f64; 3]"],
    },
    Slot {
        name: "SHADOW",
        choices: &["", "let q = 2.0;"],
    },
    Slot {
        name: "HALF",
        choices: &["0.5", "5"],
    },
    Slot {
        name: "BOUND",
        choices: &["2", "self.n", "3"],
    },
    Slot {
        name: "IDX",
        choices: &["2", "3", "self.n"],
    },
    Slot {
        name: "SMOOTH",
        choices: &["sin", "abs", "floor", "signum", "gamma"],
    },
    Slot {
        name: "BRANCH",
        choices: &["", "if q[0] > 0.0 { 1.0 } else { 0.0 } +"],
    },
    Slot {
        name: "CALL",
        choices: &["self.spring(d)", "spring(d)", "self.spring(d, d)"],
    },
    Slot {
        name: "HELPER_RECV",
        choices: &["&self", "&mut self"],
    },
    Slot {
        name: "MLEN",
        choices: &["3", "2"],
    },
    Slot {
        name: "QLEN",
        choices: &["3", "4"],
    },
    Slot {
        name: "CONSTRAINT",
        choices: &["q[0] * q[0] + q[1] * q[1] - 1.0", "self.k - 1.0"],
    },
    Slot {
        name: "STIFF_RET",
        choices: &["f64", "[f64; 1]"],
    },
    Slot {
        name: "LOOP",
        choices: &["for", "while"],
    },
];

/// A valid definition exercising masses, a helper, a loop, `let mut`, a stiff part and a
/// constraint; every `{SLOT}` is replaced by one of its choices.
const TEMPLATE: &str = "
impl Sys {
    fn masses(&self) -> [f64; {MLEN}] { [1.0, 2.0, 3.0] }
    fn spring({HELPER_RECV}, r: f64) -> f64 { 0.5 * self.k * r * r }
    fn {POTENTIAL}(&self, q: &[f64; 3]) -> {RET} {
        {SHADOW}
        let mut v = {HALF} * q[0];
        {LOOP} i in 0..{BOUND} {
            let d = q[i + 1] - q[i];
            v += {CALL};
        }
        {BRANCH} v + q[{IDX}].{SMOOTH}() * (q[1] * q[1] + 1.0).sqrt()
    }
    fn stiff_potential(&self, q: &[f64; 3]) -> {STIFF_RET} { self.s * (q[0] - q[2]).powi(2) }
    fn constraints(&self, q: &[f64; {QLEN}]) -> [f64; 1] { [{CONSTRAINT}] }
}";

fn fill(choices: &[usize]) -> String {
    let mut s = TEMPLATE.to_string();
    for (slot, &c) in SLOTS.iter().zip(choices) {
        s = s.replace(&format!("{{{}}}", slot.name), slot.choices[c]);
    }
    s
}

/// The valid choice in every slot but up to three, which hold a mistake (none in about a
/// quarter of the cases).
fn slot_choices() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec((0..SLOTS.len(), any::<prop::sample::Index>()), 0..4).prop_map(
        |mistakes| {
            let mut choices = vec![0; SLOTS.len()];
            for (slot, pick) in mistakes {
                choices[slot] = 1 + pick.index(SLOTS[slot].choices.len() - 1);
            }
            choices
        },
    )
}

// ------------------------------------------------------------------ token mutations

/// Token classes for replacements that usually keep the definition parseable (so the
/// mutations reach validation and lowering, not only the parser).
const CLASSES: &[&[&str]] = &[
    &[
        "q",
        "self",
        "x",
        "d",
        "v",
        "i",
        "r",
        "k",
        "n",
        "s",
        "sin",
        "abs",
        "powi",
        "sqrt",
        "exp",
        "spring",
        "potential",
        "constraints",
        "masses",
        "f64",
        "usize",
        "Sys",
        "Self",
    ],
    &["0", "1", "2", "3", "7", "0.5", "2.0", "1e300", "0.0", "1.0"],
    &[
        "+", "-", "*", "/", "%", "<", "==", "..", "..=", "+=", "=", "&", "!",
    ],
];

#[derive(Debug, Clone)]
enum Mutation {
    Delete(usize),
    Duplicate(usize),
    Swap(usize),
    Replace(usize, usize),
    Insert(usize, usize),
    /// Replace a token by another of its class.
    SameClass(usize, usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let at = any::<usize>();
    let word = 0..VOCABULARY.len();
    prop_oneof![
        1 => at.prop_map(Mutation::Delete),
        1 => at.prop_map(Mutation::Duplicate),
        1 => at.prop_map(Mutation::Swap),
        1 => (at, word.clone()).prop_map(|(a, w)| Mutation::Replace(a, w)),
        1 => (at, word).prop_map(|(a, w)| Mutation::Insert(a, w)),
        5 => (at, any::<usize>()).prop_map(|(a, w)| Mutation::SameClass(a, w)),
    ]
}

/// The valid template's tokens, one string each (groups flattened into their delimiters;
/// multi-character operators such as `->` kept whole).
fn valid_tokens() -> Vec<String> {
    fn flatten(ts: TokenStream, out: &mut Vec<String>) {
        let mut joint = false;
        for tt in ts {
            match tt {
                proc_macro2::TokenTree::Group(g) => {
                    let (open, close) = match g.delimiter() {
                        proc_macro2::Delimiter::Parenthesis => ("(", ")"),
                        proc_macro2::Delimiter::Bracket => ("[", "]"),
                        proc_macro2::Delimiter::Brace => ("{", "}"),
                        proc_macro2::Delimiter::None => ("", ""),
                    };
                    out.push(open.into());
                    flatten(g.stream(), out);
                    out.push(close.into());
                    joint = false;
                }
                proc_macro2::TokenTree::Punct(p) => {
                    if joint {
                        out.last_mut()
                            .expect("joint follows a punct")
                            .push(p.as_char());
                    } else {
                        out.push(p.as_char().to_string());
                    }
                    joint = p.spacing() == proc_macro2::Spacing::Joint;
                }
                other => {
                    out.push(other.to_string());
                    joint = false;
                }
            }
        }
    }
    let mut out = Vec::new();
    flatten(
        TokenStream::from_str(&fill(&vec![0; SLOTS.len()])).unwrap(),
        &mut out,
    );
    out
}

fn apply(tokens: &mut Vec<String>, m: &Mutation) {
    let n = tokens.len();
    match *m {
        Mutation::Delete(a) if n > 0 => {
            tokens.remove(a % n);
        }
        Mutation::Duplicate(a) if n > 0 => {
            let t = tokens[a % n].clone();
            tokens.insert(a % n, t);
        }
        Mutation::Swap(a) if n > 1 => tokens.swap(a % (n - 1), a % (n - 1) + 1),
        Mutation::Replace(a, w) if n > 0 => tokens[a % n] = VOCABULARY[w].to_string(),
        Mutation::Insert(a, w) => tokens.insert(a % (n + 1), VOCABULARY[w].to_string()),
        Mutation::SameClass(a, w) if n > 0 => {
            let t = &mut tokens[a % n];
            if let Some(class) = CLASSES.iter().find(|c| c.contains(&t.as_str())) {
                *t = class[w % class.len()].to_string();
            }
        }
        _ => {}
    }
}

// 256 cases each by default (about a second in all); `PROPTEST_CASES=20000 cargo test -p
// zs-macros robustness` for a longer search.
proptest! {

    /// Random tokens, as a whole item and as the body of `potential`.
    #[test]
    fn token_soups_never_panic(soup in soup()) {
        let candidates = [
            soup.clone(),
            format!("impl S {{ {soup} }}"),
            format!("impl S {{ fn potential(&self, q: &[f64; 2]) -> f64 {{ {soup} }} }}"),
        ];
        for source in candidates {
            if TokenStream::from_str(&source).is_err() {
                continue;
            }
            let out = run(&source);
            if !parses_as_impl(&source) {
                prop_assert!(out.errors > 0, "no error for\n{source}\n---\n{}", out.text);
            }
        }
    }

    /// The template with each slot valid or a known mistake: an error exactly when some slot
    /// holds a mistake.
    #[test]
    fn known_mistakes_are_reported(choices in slot_choices()) {
        let source = fill(&choices);
        let out = run(&source);
        let mistakes: Vec<&str> = SLOTS
            .iter()
            .zip(&choices)
            .filter(|(_, &c)| c != 0)
            .map(|(s, _)| s.name)
            .collect();
        if mistakes.is_empty() {
            prop_assert_eq!(out.errors, 0, "error for a valid definition:\n{}", out.text);
        } else {
            prop_assert!(
                out.errors > 0,
                "no error for the mistakes {:?} in\n{}\n---\n{}",
                mistakes,
                source,
                out.text
            );
        }
    }

    /// One to four random token edits of the valid definition.
    #[test]
    fn near_valid_definitions_never_panic(edits in prop::collection::vec(mutation(), 1..5)) {
        let mut tokens = valid_tokens();
        for m in &edits {
            apply(&mut tokens, m);
        }
        let source = tokens.join(" ");
        if TokenStream::from_str(&source).is_ok() {
            let out = run(&source);
            if !parses_as_impl(&source) {
                prop_assert!(out.errors > 0, "no error for\n{source}\n---\n{}", out.text);
            }
        }
    }
}

#[test]
fn the_template_is_valid_and_each_mistake_is_reported_alone() {
    // The all-valid template expands without errors (so the property above is not vacuous).
    let out = run(&fill(&vec![0; SLOTS.len()]));
    assert_eq!(out.errors, 0, "{}", out.text);
    // Each mistake on its own is reported.
    for (i, slot) in SLOTS.iter().enumerate() {
        for c in 1..slot.choices.len() {
            let mut choices = vec![0; SLOTS.len()];
            choices[i] = c;
            let source = fill(&choices);
            let out = run(&source);
            assert!(
                out.errors > 0,
                "{} = {:?} not reported:\n{source}",
                slot.name,
                slot.choices[c]
            );
        }
    }
}
