//! The console's rough edges, driven through a pipe: `/tools` keeps its
//! descriptions in one column whatever the length of the names.

mod common;
#[path = "common/console_pipe.rs"]
mod console_pipe;
#[path = "common/zot_proc.rs"]
mod zot_proc;

use common::TempDir;
use console_pipe::*;

#[test]
fn tools_rows_align_when_a_name_is_longer_than_the_column() {
    let t = TempDir::new("edges-console-tools");
    let long = "a_tool_name_much_longer_than_fourteen";
    let a = ext(&t, "a", &["--tools", &format!("echo,{long}")]);
    let s = run(&t, &[a], &["/tools"], true, &[]);
    let rows: Vec<&str> = s.lines().into_iter().filter(|l| l.starts_with("  echo") || l.starts_with(&format!("  {long}"))).collect();
    assert_eq!(rows.len(), 2, "{}", s.out);
    // Each description starts in the same column, after the longest name
    // and one space.
    let column = 2 + long.len() + 1;
    for r in &rows {
        let (name, rest) = r.split_at(column);
        assert!(name.ends_with(' ') && !rest.starts_with(' '), "row {r:?} in:\n{}", s.out);
    }
}
