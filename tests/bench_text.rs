//! What `make bench` writes: a difference from the floor is never a
//! negative time (examples/bench/text.rs).

#[path = "../examples/bench/text.rs"]
mod text;

#[test]
fn a_run_under_the_floor_is_not_a_negative_time() {
    assert_eq!(text::over_floor_ms(0.4242), "+0.42 ms");
    assert_eq!(text::over_floor_ms(0.0), "+0.00 ms");
    assert_eq!(text::over_floor_ms(-0.3), "0.30 ms under the floor");
}
