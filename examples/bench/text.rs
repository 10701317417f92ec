//! How a figure is written in the report: a difference from the floor is
//! said in words when it is below it, never as a negative time.

/// `d` milliseconds over the floor: `+0.42 ms`, or `0.30 ms under the
/// floor` when the run beat it (timing noise, or a real gain).
pub fn over_floor_ms(d: f64) -> String {
    if d >= 0.0 {
        format!("+{d:.2} ms")
    } else {
        format!("{:.2} ms under the floor", -d)
    }
}
