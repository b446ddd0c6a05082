//! Throughput of the pure core: events per second through `Core::handle`, effects included,
//! and heap allocations per event in steady state (counted by a wrapping global allocator).
//!
//! `cargo bench --bench machine` prints both figures; the README quotes them.
//! The workload is a recorded session of many issues, each with a full lifecycle, one failed
//! verify attempt (retry) and one bounce, so every common transition is exercised.

mod common;

use common::Script;
use sdlc_runner::machine::{Core, Event, Limits, Mode, Usage};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

struct Counting;
static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const ISSUES: u32 = 2_000;

/// Drive a core through `ISSUES` issues and record every event it was fed.
fn record() -> Vec<Event> {
    let usage = Usage {
        cost_micros: 10_000,
        elapsed_ms: 60_000,
        turns: 12,
    };
    let mut core = Core::new(Limits::default(), Mode::Continuous);
    let mut events = vec![Event::Start];
    let mut script = Script::new(usage);
    let mut pending = core.handle(&Event::Start).to_vec();
    while let Some(request) = Script::request(&pending) {
        let event = script.answer(request, |next| next > ISSUES);
        pending = core.handle(&event).to_vec();
        events.push(event);
    }
    assert!(
        core.is_terminal(),
        "the recorded session must end: {:?}",
        core.state()
    );
    events
}

fn main() {
    let events = record();
    let mut fed = 0u64;
    let mut effects = 0u64;
    let mut allocations_in_loop = 0u64;
    let mut elapsed = Duration::ZERO;
    while elapsed < Duration::from_secs(3) {
        let mut core = Core::new(Limits::default(), Mode::Continuous);
        let before = ALLOCATIONS.load(Ordering::Relaxed);
        let start = Instant::now();
        for event in &events {
            effects += core.handle(event).len() as u64;
        }
        elapsed += start.elapsed();
        allocations_in_loop += ALLOCATIONS.load(Ordering::Relaxed) - before;
        fed += events.len() as u64;
        std::hint::black_box(&core);
    }
    let per_sec = fed as f64 / elapsed.as_secs_f64();
    println!(
        "workload: {} events per session ({ISSUES} issues, each with a retry and a bounce)",
        events.len()
    );
    println!(
        "events/s: {:.2} million ({} events, {} effects, {:.3} s)",
        per_sec / 1e6,
        fed,
        effects,
        elapsed.as_secs_f64()
    );
    println!("ns/event: {:.1}", elapsed.as_nanos() as f64 / fed as f64);
    println!(
        "heap allocations per event: {:.6} ({allocations_in_loop} in {fed} events)",
        allocations_in_loop as f64 / fed as f64
    );
}
