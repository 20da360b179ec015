//! Checks ARCHITECTURE.md's layering promise against the code. The document holds one
//! layer table per crate (`actors/` and `http/`): one row per layer, foundations
//! first, the row's top-level modules in backticks in its second column. A module may
//! import only modules of its own row or of the rows above it. The check fails when a
//! module of the crate is in no row or in two, when a row names a module that does
//! not exist, when a module imports one of a row further down (naming the file and
//! the import), and when modules import each other in a loop (a row allows imports
//! both ways).
//!
//! A module's imports are the `crate::NAME` paths in its files, test code excluded;
//! its modules are the `mod` lines of the crate root not under `#[cfg(test)]`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

type Graph = BTreeMap<String, BTreeSet<String>>;

/// One edge of the import graph: `file`, a file of module `from`, names `crate::to`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Import {
    from: String,
    to: String,
    file: String,
}

/// One row of a layer table: its name and its modules.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Layer {
    name: String,
    modules: Vec<String>,
}

/// The rows of the table whose header line is exactly `header` (then a `|---|` line,
/// then one `| name | `a`, `b` |` line per layer, up to the first line that is not
/// a table row). `None` when the document has no such header.
fn parse_table(doc: &str, header: &str) -> Option<Vec<Layer>> {
    let mut lines = doc.lines().skip_while(|l| l.trim() != header);
    lines.next()?;
    let rows = lines
        .skip_while(|l| l.trim_start().starts_with("|-") || l.trim_start().starts_with("| -"))
        .take_while(|l| l.trim_start().starts_with('|'));
    let mut layers = Vec::new();
    for row in rows {
        let cells: Vec<&str> = row.trim().trim_matches('|').split('|').collect();
        let name = cells.first().map_or("", |c| c.trim()).to_string();
        // Every other piece between backticks is a name: `a`, `b` → a, b.
        let modules = cells
            .get(1)
            .map_or("", |c| c)
            .split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect();
        layers.push(Layer { name, modules });
    }
    Some(layers)
}

/// The top-level modules a crate root declares (`mod NAME;` or `pub mod NAME;`, any
/// visibility), leaving out those under `#[cfg(test)]`: test support is not a layer.
fn declared_modules(root: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut test_only = false;
    for line in root.lines().map(str::trim) {
        if line == "#[cfg(test)]" {
            test_only = true;
            continue;
        }
        let decl = line
            .strip_prefix("pub ")
            .or_else(|| line.strip_prefix("pub(crate) "))
            .unwrap_or(line);
        if let Some(name) = decl.strip_prefix("mod ").and_then(|r| r.strip_suffix(';')) {
            if !test_only {
                out.insert(name.trim().to_string());
            }
        }
        if !line.starts_with("#[") {
            test_only = false;
        }
    }
    out
}

/// Every violation of the table `layers` by the crate whose modules are `modules` and
/// whose imports are `imports`, as one line each; empty when the crate keeps it.
fn violations(layers: &[Layer], modules: &BTreeSet<String>, imports: &[Import]) -> Vec<String> {
    let mut out = Vec::new();
    let mut row_of: BTreeMap<&str, (usize, &str)> = BTreeMap::new();
    for (i, layer) in layers.iter().enumerate() {
        for m in &layer.modules {
            if !modules.contains(m) {
                out.push(format!(
                    "row `{}` names `{m}`, which is no module of the crate",
                    layer.name
                ));
            }
            if let Some((_, first)) = row_of.insert(m, (i, &layer.name)) {
                out.push(format!(
                    "`{m}` is in two rows: `{first}` and `{}`",
                    layer.name
                ));
            }
        }
    }
    for m in modules {
        if !row_of.contains_key(m.as_str()) {
            out.push(format!("`{m}` is in no row of the layer table"));
        }
    }
    for import in imports {
        let (Some((from, from_row)), Some((to, to_row))) = (
            row_of.get(import.from.as_str()),
            row_of.get(import.to.as_str()),
        ) else {
            continue;
        };
        if to > from {
            out.push(format!(
                "{}: `{}` (row `{from_row}`) imports `{}` (row `{to_row}`, further down)",
                import.file, import.from, import.to
            ));
        }
    }
    out
}

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

/// The identifier `text` starts with (after blanks).
fn leading_ident(text: &str) -> String {
    text.trim_start()
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}

/// Every `crate::NAME` mentioned in `text`, including each top-level item of
/// `use crate::{a::{b, c}, d}` (here `a` and `d`).
fn referenced(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = text;
    while let Some(at) = rest.find("crate::") {
        rest = &rest[at + "crate::".len()..];
        let Some(group) = rest.strip_prefix('{') else {
            out.insert(leading_ident(rest));
            continue;
        };
        // Split the group at its own commas, not those of nested groups.
        let mut depth = 0usize;
        let mut item_start = 0;
        for (i, c) in group.char_indices() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => {
                    out.insert(leading_ident(&group[item_start..i]));
                    break;
                }
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    out.insert(leading_ident(&group[item_start..i]));
                    item_start = i + 1;
                }
                _ => {}
            }
        }
    }
    out.remove("");
    out
}

/// The imports of the files under `dir` (recursively) of the crate whose sources are
/// in `src`, each file named `label`/its path under `src`.
fn collect(label: &str, src: &Path, dir: &Path, imports: &mut Vec<Import>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            collect(label, src, &path, imports);
            continue;
        }
        let is_test = path.file_name().is_some_and(|n| n == "tests.rs");
        if path.extension().is_none_or(|e| e != "rs") || is_test {
            continue;
        }
        let Some(module) = module_of(src, &path) else {
            continue;
        };
        let text = std::fs::read_to_string(&path).unwrap();
        let file = format!("{label}/{}", path.strip_prefix(src).unwrap().display());
        for name in referenced(&production_part(&text)) {
            if name != module {
                imports.push(Import {
                    from: module.clone(),
                    to: name,
                    file: file.clone(),
                });
            }
        }
    }
}

/// The crate in `src`: its declared modules and their imports of each other (so
/// `crate::start` of the root, or a test-only module, does not count).
fn crate_of(label: &str, src: &Path) -> (BTreeSet<String>, Vec<Import>) {
    let root = std::fs::read_to_string(src.join("lib.rs")).unwrap();
    let modules = declared_modules(&root);
    let mut imports = Vec::new();
    collect(label, src, src, &mut imports);
    imports.retain(|i| modules.contains(&i.from) && modules.contains(&i.to));
    imports.sort();
    imports.dedup_by(|a, b| a.from == b.from && a.to == b.to);
    (modules, imports)
}

/// The module-level graph of `imports`, every module of `modules` a node.
fn graph_of(modules: &BTreeSet<String>, imports: &[Import]) -> Graph {
    let mut graph: Graph = modules
        .iter()
        .map(|m| (m.clone(), BTreeSet::new()))
        .collect();
    for i in imports {
        graph
            .entry(i.from.clone())
            .or_default()
            .insert(i.to.clone());
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

fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|s| s.to_string()).collect()
}

#[test]
fn the_finder_sees_a_loop_and_its_members() {
    let mut g = Graph::new();
    g.entry("a".into()).or_default().insert("b".into());
    g.entry("b".into()).or_default().insert("c".into());
    g.entry("c".into()).or_default().insert("a".into());
    g.entry("d".into()).or_default().insert("a".into());
    let found = loops(&g);
    assert_eq!(found, vec![set(&["a", "b", "c"])]);
    assert_eq!(
        referenced("use crate::{x::{Y, q}, z};\nlet _ = crate::w::f();"),
        set(&["x", "z", "w"])
    );
}

#[test]
fn the_checker_reports_each_kind_of_violation_on_a_small_table() {
    let doc = "text\n\n| layer | modules |\n|---|---|\n| low | `a`, `b` |\n\
               | mid | `c`, `ghost` |\n| high | `d`, `b` |\n\nmore text\n";
    let layers = parse_table(doc, "| layer | modules |").unwrap();
    assert_eq!(
        layers.iter().map(|l| l.name.as_str()).collect::<Vec<_>>(),
        ["low", "mid", "high"]
    );
    assert_eq!(layers[1].modules, ["c", "ghost"]);
    assert_eq!(parse_table(doc, "| http layer | modules |"), None);

    let modules = set(&["a", "b", "c", "d", "e"]);
    let import = |from: &str, to: &str| Import {
        from: from.into(),
        to: to.into(),
        file: format!("src/{from}.rs"),
    };
    // Upwards and within a row is allowed; `a` importing `c` goes down a row.
    let imports = [import("d", "a"), import("c", "a"), import("a", "c")];
    let found = violations(&layers, &modules, &imports);
    assert_eq!(
        found,
        [
            "row `mid` names `ghost`, which is no module of the crate",
            "`b` is in two rows: `low` and `high`",
            "`e` is in no row of the layer table",
            "src/a.rs: `a` (row `low`) imports `c` (row `mid`, further down)",
        ]
    );

    // The same crate with a table that fits it has nothing to report.
    let fitting = "| layer | modules |\n|---|---|\n| low | `a`, `b`, `c` |\n| high | `d`, `e` |\n";
    let layers = parse_table(fitting, "| layer | modules |").unwrap();
    assert_eq!(
        violations(&layers, &modules, &imports),
        Vec::<String>::new()
    );

    let root = "pub mod a;\n#[cfg(test)]\nmod t;\n#[cfg(feature = \"x\")]\npub mod b;\n\
                pub(crate) mod c;\nmod d {}\n";
    assert_eq!(declared_modules(root), set(&["a", "b", "c"]));
}

#[test]
fn actors_and_http_modules_keep_the_layer_tables_without_loops() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("../ARCHITECTURE.md")).unwrap();
    let crates = [
        ("actors/src", root.join("src"), "| layer | modules |"),
        (
            "http/src",
            root.join("../http/src"),
            "| http layer | modules |",
        ),
    ];
    // Both crates are checked before failing, so one run names every violation.
    let mut found = Vec::new();
    for (label, src, header) in crates {
        let (modules, imports) = crate_of(label, &src);
        assert!(modules.len() > 5, "no modules found under {label}");
        let Some(layers) = parse_table(&doc, header) else {
            found.push(format!("ARCHITECTURE.md has no table headed `{header}`"));
            continue;
        };
        for v in violations(&layers, &modules, &imports) {
            found.push(format!("{label} against `{header}`: {v}"));
        }
        for members in loops(&graph_of(&modules, &imports)) {
            found.push(format!("{label}: import loop among {members:?}"));
        }
    }
    assert!(
        found.is_empty(),
        "the layering of ARCHITECTURE.md is broken:\n{}",
        found.join("\n")
    );
}
