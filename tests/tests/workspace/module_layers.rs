//! Modules import in one direction: within every module of every crate of the workspace, the
//! child modules form an acyclic graph (docs/ARCHITECTURE.md, "Layers"). A reference from
//! anywhere under child `a` to anything under its sibling `b` is an edge `a → b`; a cycle
//! `a → b → a` fails the test with the references that close it.
//!
//! References are read from the source with `syn`: every path and `use` tree that starts at
//! `crate`, `self` or `super`, or at a child module of the module it is written in, resolved
//! through the `pub use` re-exports on the way (`crate::StepError` is a reference to
//! `error`). Test modules (`#[cfg(test)]`) are left out: a test may reach across layers. A
//! reference to a parent module's own items (the interface a parent offers its children) is
//! not an edge between siblings.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use syn::visit::Visit;

/// A module path inside a crate, `[]` for the crate root.
type ModPath = Vec<String>;

/// What the test knows of one module: its children and its `pub use` re-exports.
#[derive(Default, Debug)]
struct Module {
    children: BTreeSet<String>,
    /// Name → the absolute path it re-exports.
    reexports: BTreeMap<String, ModPath>,
}

/// A reference from module `from` to the absolute path `to` (written `text` in `file`).
#[derive(Debug, Clone)]
struct Reference {
    from: ModPath,
    to: ModPath,
    file: PathBuf,
    text: String,
}

fn is_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg")
            && a.parse_args::<syn::Meta>()
                .is_ok_and(|m| m.path().is_ident("test"))
    })
}

fn item_attrs(item: &syn::Item) -> Option<&[syn::Attribute]> {
    Some(match item {
        syn::Item::Mod(i) => &i.attrs,
        syn::Item::Use(i) => &i.attrs,
        syn::Item::Fn(i) => &i.attrs,
        syn::Item::Impl(i) => &i.attrs,
        syn::Item::Struct(i) => &i.attrs,
        syn::Item::Enum(i) => &i.attrs,
        syn::Item::Trait(i) => &i.attrs,
        syn::Item::Const(i) => &i.attrs,
        syn::Item::Static(i) => &i.attrs,
        syn::Item::Type(i) => &i.attrs,
        syn::Item::Macro(i) => &i.attrs,
        _ => return None,
    })
}

/// Expand a `use` tree into its full paths (as written, not yet resolved); a glob ends in `*`.
fn use_paths(tree: &syn::UseTree, prefix: &mut Vec<String>, out: &mut Vec<(Vec<String>, String)>) {
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            use_paths(&p.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(n) => {
            let mut full = prefix.clone();
            if n.ident != "self" {
                full.push(n.ident.to_string());
            }
            out.push((full, n.ident.to_string()));
        }
        syn::UseTree::Rename(r) => {
            let mut full = prefix.clone();
            full.push(r.ident.to_string());
            out.push((full, r.rename.to_string()));
        }
        syn::UseTree::Glob(_) => {
            let mut full = prefix.clone();
            full.push("*".into());
            out.push((full, "*".into()));
        }
        syn::UseTree::Group(g) => {
            for t in &g.items {
                use_paths(t, prefix, out);
            }
        }
    }
}

/// A parsed crate: its modules and the raw references of each module.
struct Crate {
    modules: BTreeMap<ModPath, Module>,
    /// (module, path as written, file).
    raw: Vec<(ModPath, Vec<String>, PathBuf)>,
}

impl Crate {
    fn load(src: &Path) -> Crate {
        let mut c = Crate {
            modules: BTreeMap::new(),
            raw: Vec::new(),
        };
        let root = ["lib.rs", "main.rs"]
            .iter()
            .map(|f| src.join(f))
            .find(|p| p.exists())
            .unwrap_or_else(|| panic!("no lib.rs or main.rs in {}", src.display()));
        c.load_file(&root, src, Vec::new());
        c
    }

    /// Load the module `path` from `file`; its children's files are under `dir`.
    fn load_file(&mut self, file: &Path, dir: &Path, path: ModPath) {
        let text = std::fs::read_to_string(file)
            .unwrap_or_else(|e| panic!("reading {}: {e}", file.display()));
        let ast = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        self.load_items(&ast.items, file, dir, path);
    }

    fn load_items(&mut self, items: &[syn::Item], file: &Path, dir: &Path, path: ModPath) {
        self.modules.entry(path.clone()).or_default();
        for item in items {
            if item_attrs(item).is_some_and(is_cfg_test) {
                continue;
            }
            match item {
                syn::Item::Mod(m) => {
                    let name = m.ident.to_string();
                    self.modules
                        .get_mut(&path)
                        .unwrap()
                        .children
                        .insert(name.clone());
                    let mut child = path.clone();
                    child.push(name.clone());
                    let child_dir = dir.join(&name);
                    if let Some((_, inner)) = &m.content {
                        self.load_items(inner, file, &child_dir, child);
                    } else {
                        let flat = dir.join(format!("{name}.rs"));
                        let nested = child_dir.join("mod.rs");
                        let f = if flat.exists() { flat } else { nested };
                        self.load_file(&f, &child_dir, child);
                    }
                }
                syn::Item::Use(u) => {
                    let mut paths = Vec::new();
                    use_paths(&u.tree, &mut Vec::new(), &mut paths);
                    let public = matches!(u.vis, syn::Visibility::Public(_));
                    for (full, name) in paths {
                        if public && name != "*" {
                            let abs = absolute(&path, &full, &self.modules[&path]);
                            if let Some(abs) = abs {
                                self.modules
                                    .get_mut(&path)
                                    .unwrap()
                                    .reexports
                                    .insert(name, abs);
                            }
                        }
                        self.raw.push((path.clone(), full, file.to_path_buf()));
                    }
                }
                other => {
                    let mut v = PathCollector::default();
                    v.visit_item(other);
                    for p in v.paths {
                        self.raw.push((path.clone(), p, file.to_path_buf()));
                    }
                }
            }
        }
    }

    /// Follow `abs` through modules and re-exports to the module that defines what it names.
    fn resolve(&self, abs: &[String], depth: usize) -> ModPath {
        let mut at: ModPath = Vec::new();
        for (i, seg) in abs.iter().enumerate() {
            let Some(m) = self.modules.get(&at) else {
                return at;
            };
            if m.children.contains(seg) {
                at.push(seg.clone());
            } else if let Some(target) = m.reexports.get(seg) {
                if depth > 16 || target.as_slice() == abs {
                    return at;
                }
                let mut next = target.clone();
                next.extend_from_slice(&abs[i + 1..]);
                return self.resolve(&next, depth + 1);
            } else {
                return at;
            }
        }
        at
    }

    fn references(&self) -> Vec<Reference> {
        let mut out = Vec::new();
        for (from, written, file) in &self.raw {
            let Some(abs) = absolute(from, written, &self.modules[from]) else {
                continue;
            };
            out.push(Reference {
                from: from.clone(),
                to: self.resolve(&abs, 0),
                file: file.clone(),
                text: written.join("::"),
            });
        }
        out
    }
}

/// The absolute path of `written` in module `at`, if it starts at `crate`, `self`, `super` or a
/// child module of `at`; `None` for anything else (external crates, local names, prelude).
fn absolute(at: &ModPath, written: &[String], module: &Module) -> Option<ModPath> {
    let first = written.first()?;
    let mut base = at.clone();
    let mut rest = written;
    match first.as_str() {
        "crate" => {
            base.clear();
            rest = &written[1..];
        }
        "self" => rest = &written[1..],
        "super" => {
            while rest.first().is_some_and(|s| s == "super") {
                base.pop()?;
                rest = &rest[1..];
            }
        }
        name if module.children.contains(name) => {}
        _ => return None,
    }
    base.extend(rest.iter().filter(|s| *s != "*").cloned());
    Some(base)
}

/// Every path in an item (expressions, types, trait bounds, attributes' arguments excluded).
#[derive(Default)]
struct PathCollector {
    paths: Vec<Vec<String>>,
}

impl<'ast> Visit<'ast> for PathCollector {
    fn visit_path(&mut self, p: &'ast syn::Path) {
        self.paths
            .push(p.segments.iter().map(|s| s.ident.to_string()).collect());
        syn::visit::visit_path(self, p);
    }
    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        let mut paths = Vec::new();
        use_paths(&u.tree, &mut Vec::new(), &mut paths);
        self.paths.extend(paths.into_iter().map(|(full, _)| full));
    }
    fn visit_item_mod(&mut self, m: &'ast syn::ItemMod) {
        if !is_cfg_test(&m.attrs) {
            syn::visit::visit_item_mod(self, m);
        }
    }
    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        if !is_cfg_test(&f.attrs) {
            syn::visit::visit_item_fn(self, f);
        }
    }
    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        if !is_cfg_test(&f.attrs) {
            syn::visit::visit_impl_item_fn(self, f);
        }
    }
}

/// For each module, the edges between its children: `(a, b) → the references behind a → b`.
type SiblingEdges = BTreeMap<ModPath, BTreeMap<(String, String), Vec<Reference>>>;

fn sibling_edges(refs: &[Reference]) -> SiblingEdges {
    let mut graphs: SiblingEdges = BTreeMap::new();
    for r in refs {
        let common = r.from.iter().zip(&r.to).take_while(|(a, b)| a == b).count();
        // A reference into one's own subtree or to an ancestor's own items is not between
        // siblings.
        if common == r.from.len() || common == r.to.len() {
            continue;
        }
        let parent = r.from[..common].to_vec();
        let edge = (r.from[common].clone(), r.to[common].clone());
        graphs
            .entry(parent)
            .or_default()
            .entry(edge)
            .or_default()
            .push(r.clone());
    }
    graphs
}

/// The strongly connected components with more than one node (Tarjan), each sorted.
fn cycles(edges: &BTreeMap<(String, String), Vec<Reference>>) -> Vec<Vec<String>> {
    let mut adj: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (a, b) in edges.keys() {
        adj.entry(a.as_str()).or_default().push(b.as_str());
        adj.entry(b.as_str()).or_default();
    }
    struct Tarjan<'a> {
        adj: &'a BTreeMap<&'a str, Vec<&'a str>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        next: usize,
        out: Vec<Vec<String>>,
    }
    impl<'a> Tarjan<'a> {
        fn visit(&mut self, v: &'a str) {
            self.index.insert(v, self.next);
            self.low.insert(v, self.next);
            self.next += 1;
            self.stack.push(v);
            for &w in &self.adj[v] {
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let lw = self.low[w];
                    let lv = self.low.get_mut(v).unwrap();
                    *lv = (*lv).min(lw);
                } else if self.stack.contains(&w) {
                    let iw = self.index[w];
                    let lv = self.low.get_mut(v).unwrap();
                    *lv = (*lv).min(iw);
                }
            }
            if self.low[v] == self.index[v] {
                let mut comp = Vec::new();
                loop {
                    let w = self.stack.pop().unwrap();
                    comp.push(w.to_string());
                    if w == v {
                        break;
                    }
                }
                if comp.len() > 1 {
                    comp.sort();
                    self.out.push(comp);
                }
            }
        }
    }
    let mut t = Tarjan {
        adj: &adj,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        next: 0,
        out: Vec::new(),
    };
    for &v in adj.keys() {
        if !t.index.contains_key(v) {
            t.visit(v);
        }
    }
    t.out
}

/// The cycles among siblings in the crate at `src`, described for a failure message.
fn crate_cycles(src: &Path) -> Vec<String> {
    let c = Crate::load(src);
    let mut report = Vec::new();
    for (parent, edges) in sibling_edges(&c.references()) {
        for comp in cycles(&edges) {
            let module = if parent.is_empty() {
                "the crate root".to_string()
            } else {
                parent.join("::")
            };
            let mut lines = vec![format!(
                "in {} ({module}): the modules {comp:?} import each other",
                src.display()
            )];
            for ((a, b), refs) in &edges {
                if comp.contains(a) && comp.contains(b) {
                    let r = &refs[0];
                    lines.push(format!(
                        "  {a} -> {b}: {} in {} ({} reference(s))",
                        r.text,
                        r.file.display(),
                        refs.len()
                    ));
                }
            }
            report.push(lines.join("\n"));
        }
    }
    report
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

/// The crate root's modules bottom-up (each imports only from those before it), when acyclic:
/// `cargo test -p zs-tests --test workspace module_layers:: -- --nocapture` prints them (the order
/// docs/ARCHITECTURE.md lists).
fn root_layers(src: &Path) -> Vec<String> {
    let c = Crate::load(src);
    let graphs = sibling_edges(&c.references());
    let mut nodes: BTreeSet<String> = c.modules[&Vec::new()].children.clone();
    let edges = graphs.get(&Vec::new()).cloned().unwrap_or_default();
    let mut order = Vec::new();
    while !nodes.is_empty() {
        let ready: Vec<String> = nodes
            .iter()
            .filter(|n| {
                !edges
                    .keys()
                    .any(|(a, b)| a == *n && b != *n && nodes.contains(b))
            })
            .cloned()
            .collect();
        if ready.is_empty() {
            break;
        }
        for n in &ready {
            nodes.remove(n);
        }
        order.push(ready.join(", "));
    }
    order
}

#[test]
fn every_crate_imports_in_one_direction() {
    let mut report = Vec::new();
    for krate in [
        "zs-symbolic",
        "zs-macros",
        "zs-runtime",
        "systems",
        "benches",
    ] {
        let src = workspace().join(krate).join("src");
        report.extend(crate_cycles(&src));
        println!("{krate}: {}", root_layers(&src).join(" < "));
    }
    assert!(report.is_empty(), "{}", report.join("\n"));
}

#[test]
fn the_check_sees_a_cycle_and_resolves_reexports() {
    // A crate written for the test: `a` uses `b` through the root's re-export, `b` uses `a`
    // through `super`; `c` uses `a` only (no cycle).
    let dir = std::env::temp_dir().join(format!("zs-module-layers-{}", std::process::id()));
    std::fs::create_dir_all(dir.join("a")).unwrap();
    std::fs::write(
        dir.join("lib.rs"),
        "mod a; mod b; mod c; pub use b::Thing;\n#[cfg(test)]\nmod tests { use crate::c::C; }\n",
    )
    .unwrap();
    std::fs::write(dir.join("a/mod.rs"), "mod inner;\n").unwrap();
    std::fs::write(
        dir.join("a/inner.rs"),
        "pub struct A; fn f() -> crate::Thing { todo!() }\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("b.rs"),
        "pub struct Thing;\nuse super::{a::inner::A as Alias};\n",
    )
    .unwrap();
    std::fs::write(dir.join("c.rs"), "use crate::a; pub struct C;\n").unwrap();
    let report = crate_cycles(&dir);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(report.len(), 1, "{report:?}");
    assert!(report[0].contains(r#"["a", "b"]"#), "{}", report[0]);
    assert!(report[0].contains("a -> b: crate::Thing"), "{}", report[0]);
    assert!(
        report[0].contains("b -> a: super::a::inner::A"),
        "{}",
        report[0]
    );
}
