//! Checks ARCHITECTURE.md's layering promise: the top-level modules of `actors/` and of
//! `http/` import each other without loops. A module's imports are the `crate::NAME`
//! paths in its files (test code excluded); a loop is reported with its members.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

type Graph = BTreeMap<String, BTreeSet<String>>;

/// The top-level module a source file belongs to (`None` for the crate root).
fn module_of(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).ok()?;
    let first = rel.components().next()?.as_os_str().to_str()?;
    let name = first.strip_suffix(".rs").unwrap_or(first);
    (name != "lib" && name != "main").then(|| name.to_string())
}

/// The code of a file without its test code and comments: `tests.rs` files are
/// skipped by the caller, an inline `#[cfg(test)] mod tests {` ends the production
/// part, and comment lines go (a doc link is not an import).
fn production_part(text: &str) -> String {
    let code = text
        .find("#[cfg(test)]\nmod tests {")
        .map_or(text, |end| &text[..end]);
    code.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Every `crate::NAME` mentioned in `text`, including inside `use crate::{a, b}`.
fn referenced(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = text;
    while let Some(at) = rest.find("crate::") {
        rest = &rest[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for item in group[..end].split(',') {
                let name: String = item
                    .trim()
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                out.insert(name);
            }
        } else {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            out.insert(name);
        }
    }
    out
}

fn collect(src: &Path, dir: &Path, graph: &mut Graph) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(src, &path, graph);
            continue;
        }
        let is_test = path
            .file_name()
            .is_some_and(|n| n == "tests.rs" || n == "testkit.rs");
        if path.extension().is_none_or(|e| e != "rs") || is_test {
            continue;
        }
        let Some(module) = module_of(src, &path) else {
            continue;
        };
        let text = std::fs::read_to_string(&path).unwrap();
        let deps = graph.entry(module.clone()).or_default();
        for name in referenced(&production_part(&text)) {
            if name != module && name.chars().next().is_some_and(|c| c.is_ascii_lowercase()) {
                deps.insert(name);
            }
        }
    }
}

/// The import graph of the crate whose sources are in `src`, restricted to modules
/// that exist (so `crate::start` of the root does not count).
fn graph_of(src: &Path) -> Graph {
    let mut graph = Graph::new();
    collect(src, src, &mut graph);
    let modules: BTreeSet<String> = graph.keys().cloned().collect();
    for deps in graph.values_mut() {
        deps.retain(|d| modules.contains(d));
    }
    graph
}

/// The loops of `graph`: strongly connected components with more than one module.
fn loops(graph: &Graph) -> Vec<BTreeSet<String>> {
    // Reachability by depth-first search from every node; small graphs, so simple.
    let reach = |from: &str| {
        let mut seen = BTreeSet::new();
        let mut stack = vec![from.to_string()];
        while let Some(n) = stack.pop() {
            for d in graph.get(&n).into_iter().flatten() {
                if seen.insert(d.clone()) {
                    stack.push(d.clone());
                }
            }
        }
        seen
    };
    let reaches: BTreeMap<&String, BTreeSet<String>> =
        graph.keys().map(|k| (k, reach(k))).collect();
    let mut out: Vec<BTreeSet<String>> = Vec::new();
    for (a, ra) in &reaches {
        let comp: BTreeSet<String> = ra
            .iter()
            .filter(|b| reaches.get(b).is_some_and(|rb| rb.contains(*a)))
            .cloned()
            .collect();
        if comp.len() > 1 && !out.contains(&comp) {
            out.push(comp);
        }
    }
    out
}

#[test]
fn the_finder_sees_a_loop_and_its_members() {
    let mut g = Graph::new();
    g.entry("a".into()).or_default().insert("b".into());
    g.entry("b".into()).or_default().insert("c".into());
    g.entry("c".into()).or_default().insert("a".into());
    g.entry("d".into()).or_default().insert("a".into());
    let found = loops(&g);
    assert_eq!(found.len(), 1);
    assert_eq!(
        found[0],
        ["a", "b", "c"].iter().map(|s| s.to_string()).collect()
    );
    assert!(referenced("use crate::{x::Y, z};\nlet _ = crate::w::f();")
        .is_superset(&["x", "z", "w"].iter().map(|s| s.to_string()).collect()));
}

#[test]
fn actors_and_http_modules_import_each_other_without_loops() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for src in [root.join("src"), root.join("../http/src")] {
        let graph = graph_of(&src);
        assert!(graph.len() > 5, "no modules found under {}", src.display());
        let found = loops(&graph);
        assert!(
            found.is_empty(),
            "import loops in {}: {found:?}",
            src.display()
        );
    }
}
