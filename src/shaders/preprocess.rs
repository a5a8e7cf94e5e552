//! A tiny WGSL preprocessor: `#include "file.wgsl"` and `#if NAME` / `#if !NAME` / `#else` / `#endif`,
//! where an `#if` may join such terms with `&&` (`#if UNORDERED && !FP8_STORE`).
//!
//! Why: WGSL has no includes, and a shader that merely *mentions* a subgroup builtin fails validation on
//! a device without `Features::SUBGROUP`. Variants (subgroup / portable) are therefore chosen textually.
//! This file is shared with `build.rs`, which validates every variant of every shader with naga.

/// Expands includes (looked up with `lookup`) and conditionals (`defines` are the names that are true).
pub fn preprocess(name: &str, lookup: &dyn Fn(&str) -> Option<String>, defines: &[&str]) -> Result<String, String> {
    let mut out = String::new();
    expand(name, lookup, defines, &mut out, 0)?;
    Ok(out)
}

fn expand(
    name: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
    defines: &[&str],
    out: &mut String,
    depth: usize,
) -> Result<(), String> {
    if depth > 8 {
        return Err(format!("{name}: includes nested too deeply"));
    }
    let src = lookup(name).ok_or_else(|| format!("shader `{name}` not found"))?;
    // Stack of (this branch active, any enclosing inactive, seen #else).
    let mut stack: Vec<(bool, bool, bool)> = Vec::new();
    for (lineno, line) in src.lines().enumerate() {
        let t = line.trim_start();
        let active = stack.iter().all(|&(a, _, _)| a);
        if let Some(rest) = t.strip_prefix("#if ") {
            let val = rest.split("&&").all(|term| {
                let term = term.trim();
                match term.strip_prefix('!') {
                    Some(k) => !defines.contains(&k.trim()),
                    None => defines.contains(&term),
                }
            });
            stack.push((val, !active, false));
        } else if t.starts_with("#else") {
            let top = stack.last_mut().ok_or_else(|| format!("{name}:{}: #else without #if", lineno + 1))?;
            if top.2 {
                return Err(format!("{name}:{}: second #else", lineno + 1));
            }
            top.0 = !top.0;
            top.2 = true;
        } else if t.starts_with("#endif") {
            stack.pop().ok_or_else(|| format!("{name}:{}: #endif without #if", lineno + 1))?;
        } else if let Some(rest) = t.strip_prefix("#include ") {
            if active {
                let inc = rest.trim().trim_matches('"');
                expand(inc, lookup, defines, out, depth + 1)?;
            }
        } else if active {
            out.push_str(line);
            out.push('\n');
        }
    }
    if !stack.is_empty() {
        return Err(format!("{name}: unterminated #if"));
    }
    Ok(())
}

/// The `#if` names a shader (and its includes) mentions, sorted and deduplicated.
pub fn conditions(name: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Vec<String> {
    let mut names = Vec::new();
    let mut todo = vec![name.to_string()];
    let mut seen = Vec::new();
    while let Some(n) = todo.pop() {
        if seen.contains(&n) {
            continue;
        }
        let Some(src) = lookup(&n) else { continue };
        seen.push(n);
        for line in src.lines() {
            let t = line.trim_start();
            if let Some(rest) = t.strip_prefix("#if ") {
                for term in rest.split("&&") {
                    names.push(term.trim().trim_start_matches('!').trim().to_string());
                }
            } else if let Some(rest) = t.strip_prefix("#include ") {
                todo.push(rest.trim().trim_matches('"').to_string());
            }
        }
    }
    names.sort();
    names.dedup();
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(src: &str, defines: &[&str]) -> String {
        let lookup = |n: &str| (n == "s.wgsl").then(|| src.to_string());
        preprocess("s.wgsl", &lookup, defines).unwrap()
    }

    #[test]
    fn conjunctions_need_every_term() {
        let src = "#if A && !B && C\nyes\n#else\nno\n#endif\n";
        assert_eq!(run(src, &["A", "C"]), "yes\n");
        assert_eq!(run(src, &["A", "B", "C"]), "no\n");
        assert_eq!(run(src, &["A"]), "no\n");
        assert_eq!(run(src, &[]), "no\n");
        let lookup = |n: &str| (n == "s.wgsl").then(|| src.to_string());
        assert_eq!(conditions("s.wgsl", &lookup), ["A", "B", "C"]);
    }
}
