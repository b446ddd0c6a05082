//! The overview drawn for the live status page (`run --http`): an SVG with a simple layered
//! layout computed here, so the page needs no layout engine and no script from elsewhere. Each
//! overview state is a group `id="state-<Name>"`; a phase holds one chip per step state
//! (`id="state-<Step state>"`), so the page highlights a worker's exact state by its journal
//! name. Derived from the same exploration as the other views, and checked fresh with them.

use super::views::{phase_of, View};
use super::xml::escape as xml_escape;
use super::{Graph, Kind};
use crate::step::Step;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

const CHIP_W: u32 = 88;
const CHIP_H: u32 = 24;
const PLAIN_W: u32 = 132;
const NODE_H: u32 = 64;
const GAP_X: u32 = 48;
const ROW_Y: [u32; 2] = [24, 164];
const MARGIN: u32 = 16;

/// The colour of an arrow by what it decides (as in the DOT views, in CSS names).
fn colour(kind: Kind) -> &'static str {
    match kind {
        Kind::Advance => "#222",
        Kind::Retry | Kind::Restart | Kind::Stop => "#777",
        Kind::Bounce => "#c60",
        Kind::Escalate => "#d33",
        Kind::Wait | Kind::Continue => "#37a",
        Kind::AskPerson => "#838",
        Kind::Halt => "#b00",
        Kind::Merged => "#282",
    }
}

/// Which of several kinds between two states the single drawn arrow shows.
fn weight(kind: Kind) -> u8 {
    match kind {
        Kind::Halt => 9,
        Kind::Merged => 8,
        Kind::Escalate => 7,
        Kind::AskPerson => 6,
        Kind::Wait => 5,
        Kind::Advance => 4,
        Kind::Continue => 3,
        Kind::Bounce => 2,
        _ => 1,
    }
}

struct Placed {
    name: String,
    steps: Vec<&'static str>,
    x: u32,
    y: u32,
    w: u32,
    h: u32,
}

/// The step states each phase of the overview stands for, in lifecycle order.
fn steps_of(full: &Graph) -> BTreeMap<&'static str, Vec<&'static str>> {
    let mut by_phase: BTreeMap<&'static str, Vec<&'static str>> = BTreeMap::new();
    for step in Step::ALL {
        let name = crate::machine::state_of_step(step).name();
        if let Some(phase) = phase_of(full, name) {
            by_phase.entry(phase).or_default().push(name);
        }
    }
    by_phase
}

/// Rank of each state along the advance edges from the initial state (longest path), so the
/// lifecycle reads left to right; states no advance reaches go to the second row.
fn ranks(view: &Graph) -> BTreeMap<String, u32> {
    let mut rank: BTreeMap<String, u32> = BTreeMap::new();
    rank.insert(view.initial.clone(), 0);
    // Longest path by relaxation; at most one pass per node, so a cycle cannot run away.
    for _ in 0..view.leaves.len() {
        let mut changed = false;
        for e in view.edges.iter().filter(|e| e.kind == Kind::Advance) {
            if e.from == e.to || !view.leaves.contains_key(&e.to) {
                continue;
            }
            if let Some(&r) = rank.get(&e.from) {
                if rank.get(&e.to).is_none_or(|&t| t < r + 1) {
                    rank.insert(e.to.clone(), r + 1);
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
    }
    rank
}

fn place(full: &Graph, view: &Graph) -> Vec<Placed> {
    let steps = steps_of(full);
    let rank = ranks(view);
    let size = |name: &str| -> (u32, Vec<&'static str>) {
        match steps.get(name) {
            Some(s) => (s.len() as u32 * (CHIP_W + 6) + 10, s.clone()),
            None => (PLAIN_W, Vec::new()),
        }
    };
    // Row 0: one state per rank (the one with the longest name chain wins ties: the phase);
    // everything else goes to row 1 in rank order, then by name.
    let mut by_rank: BTreeMap<u32, Vec<&String>> = BTreeMap::new();
    for name in view.leaves.keys() {
        if let Some(r) = rank.get(name) {
            by_rank.entry(*r).or_default().push(name);
        }
    }
    let mut main = Vec::new();
    let mut second: Vec<&String> = Vec::new();
    for names in by_rank.values() {
        let mut names = names.clone();
        names.sort_by_key(|n| {
            (
                std::cmp::Reverse(steps.get(n.as_str()).map_or(0, Vec::len)),
                *n,
            )
        });
        main.push(names[0]);
        second.extend(names.into_iter().skip(1));
    }
    let ranked: BTreeSet<&String> = main.iter().chain(second.iter()).copied().collect();
    second.extend(view.leaves.keys().filter(|n| !ranked.contains(n)));
    let mut placed = Vec::new();
    for (row, names) in [main, second].into_iter().enumerate() {
        let mut x = MARGIN;
        for name in names {
            let (w, chips) = size(name);
            placed.push(Placed {
                name: name.clone(),
                steps: chips,
                x,
                y: ROW_Y[row],
                w,
                h: NODE_H,
            });
            x += w + GAP_X;
        }
    }
    placed
}

/// The SVG of the page's diagram.
pub fn svg(full: &Graph, view: &View) -> String {
    let placed = place(full, &view.graph);
    let at: BTreeMap<&str, &Placed> = placed.iter().map(|p| (p.name.as_str(), p)).collect();
    let width = placed.iter().map(|p| p.x + p.w).max().unwrap_or(0) + MARGIN;
    let height = ROW_Y[1] + NODE_H + MARGIN;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"machine\" viewBox=\"0 0 {width} {height}\" role=\"img\" aria-label=\"{}\">",
        xml_escape(&view.caption)
    );
    out.push_str(
        "<!-- Generated by `sdlc-runner diagram` from the executable machine. Do not edit. -->\n",
    );
    let kinds: BTreeSet<Kind> = view.graph.edges.iter().map(|e| e.kind).collect();
    out.push_str("<defs>\n");
    for kind in &kinds {
        let _ = writeln!(
            out,
            "<marker id=\"arrow-{k}\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"7\" markerHeight=\"7\" orient=\"auto-start-reverse\"><path d=\"M0,0L10,5L0,10z\" fill=\"{c}\"/></marker>",
            k = kind.name().replace(' ', "-"),
            c = colour(*kind)
        );
    }
    out.push_str("</defs>\n");
    // One arrow per pair of distinct drawn states, in the colour of the weightiest kind.
    let mut arrows: BTreeMap<(&str, &str), (Kind, BTreeSet<&str>)> = BTreeMap::new();
    for e in &view.graph.edges {
        if e.from == e.to || !at.contains_key(e.from.as_str()) || !at.contains_key(e.to.as_str()) {
            continue;
        }
        let entry = arrows
            .entry((e.from.as_str(), e.to.as_str()))
            .or_insert((e.kind, BTreeSet::new()));
        if weight(e.kind) > weight(entry.0) {
            entry.0 = e.kind;
        }
        entry.1.insert(e.kind.name());
    }
    out.push_str("<g class=\"edges\" fill=\"none\">\n");
    for ((from, to), (kind, names)) in &arrows {
        write_arrow(&mut out, (from, at[from]), (to, at[to]), *kind, names);
    }
    out.push_str("</g>\n<g class=\"states\">\n");
    for p in &placed {
        write_state(&mut out, p, view.graph.finals.contains(&p.name));
    }
    out.push_str("</g>\n</svg>\n");
    out
}

/// One arrow between two drawn states, named by the kinds of edge it stands for.
fn write_arrow(
    out: &mut String,
    (from, a): (&str, &Placed),
    (to, b): (&str, &Placed),
    kind: Kind,
    names: &BTreeSet<&str>,
) {
    let (ax, ay) = (a.x + a.w / 2, a.y + a.h / 2);
    let (bx, by) = (b.x + b.w / 2, b.y + b.h / 2);
    // Leave and enter through the facing sides; bend so that opposite arrows part.
    let (sx, sy, tx, ty) = if a.y == b.y {
        let (sx, tx) = if ax < bx {
            (a.x + a.w, b.x)
        } else {
            (a.x, b.x + b.w)
        };
        (sx, ay, tx, by)
    } else if ay < by {
        (ax, a.y + a.h, bx, b.y)
    } else {
        (ax, a.y, bx, b.y + b.h)
    };
    let (mx, my) = ((sx + tx) / 2, (sy + ty) / 2);
    let bend: i64 = if (from, to) < (to, from) { 18 } else { -18 };
    let (cx, cy) = if a.y == b.y {
        (mx as i64, my as i64 - bend - (sx.abs_diff(tx) / 8) as i64)
    } else {
        (mx as i64 + bend, my as i64)
    };
    let _ = writeln!(
        out,
        "<path class=\"edge {k}\" d=\"M{sx},{sy} Q{cx},{cy} {tx},{ty}\" stroke=\"{c}\" stroke-width=\"{w}\" marker-end=\"url(#arrow-{k})\"><title>{from} → {to}: {names}</title></path>",
        k = kind.name().replace(' ', "-"),
        c = colour(kind),
        w = if matches!(kind, Kind::Halt | Kind::Merged | Kind::Escalate) { "2" } else { "1.2" },
        names = names.iter().copied().collect::<Vec<_>>().join(", "),
    );
}

/// One drawn state: its box, its name and the chips of the steps it holds.
fn write_state(out: &mut String, p: &Placed, final_state: bool) {
    let _ = writeln!(
        out,
        "<g class=\"state{}\" id=\"state-{n}\" data-state=\"{n}\" data-states=\"{all}\">",
        if final_state { " final" } else { "" },
        n = xml_escape(&p.name),
        all = std::iter::once(p.name.as_str())
            .chain(p.steps.iter().copied())
            .collect::<Vec<_>>()
            .join(" "),
    );
    let _ = writeln!(
        out,
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" rx=\"10\"/>",
        p.x, p.y, p.w, p.h
    );
    let label_y = if p.steps.is_empty() {
        p.y + p.h / 2 + 5
    } else {
        p.y + 18
    };
    let _ = writeln!(
        out,
        "<text class=\"label\" x=\"{}\" y=\"{label_y}\" text-anchor=\"middle\">{}</text>",
        p.x + p.w / 2,
        xml_escape(&p.name)
    );
    for (i, step) in p.steps.iter().enumerate() {
        let x = p.x + 8 + i as u32 * (CHIP_W + 6);
        let y = p.y + p.h - CHIP_H - 8;
        let _ = writeln!(
            out,
            "<g class=\"step\" id=\"state-{step}\" data-state=\"{step}\"><rect x=\"{x}\" y=\"{y}\" width=\"{CHIP_W}\" height=\"{CHIP_H}\" rx=\"6\"/><text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{step}</text></g>",
            x + CHIP_W / 2,
            y + 16
        );
    }
    out.push_str("</g>\n");
}
