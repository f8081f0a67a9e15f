//! The report as one self-contained HTML page: every plot is inline SVG, nothing is fetched.

use std::fmt::Write;

use super::{bytes_text, intra_inter, intra_inter_per_node, node_of_rank, percent, rank_list, top_functions};
use crate::profile::merge::Profile;
use crate::profile::rank_file::SIZE_BUCKETS;

fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// A colour from white (0) to dark blue (1).
fn shade(level: f64) -> String {
    let level = level.clamp(0.0, 1.0);
    let channel = |from: f64, to: f64| (from + (to - from) * level).round() as u8;
    format!("#{:02x}{:02x}{:02x}", channel(255.0, 8.0), channel(255.0, 48.0), channel(255.0, 107.0))
}

/// The bytes matrix as a heat map, ranks grouped by node (lines between nodes), colour on a
/// logarithmic scale.
fn heat_map(profile: &Profile) -> String {
    let n = profile.size.max(1);
    let nodes = node_of_rank(profile);
    let mut order: Vec<usize> = (0..profile.size).collect();
    order.sort_by_key(|&rank| (nodes[rank].unwrap_or(usize::MAX), rank));
    let cell = (480.0 / n as f64).clamp(4.0, 60.0);
    let margin = 40.0;
    let side = cell * n as f64;
    let max = profile.bytes.iter().flatten().copied().max().unwrap_or(0).max(1) as f64;
    let mut svg = format!(r#"<svg class="plot" id="heatmap" xmlns="http://www.w3.org/2000/svg" width="{w}" height="{w}" viewBox="0 0 {w} {w}">"#, w = side + margin + 10.0);
    for (row, &from) in order.iter().enumerate() {
        for (column, &to) in order.iter().enumerate() {
            let bytes = profile.bytes[from][to];
            let level = if bytes == 0 { 0.0 } else { (1.0 + bytes as f64).ln() / (1.0 + max).ln() };
            let _ = write!(
                svg,
                r#"<rect x="{:.1}" y="{:.1}" width="{cell:.1}" height="{cell:.1}" fill="{}"><title>rank {from} to rank {to}: {}</title></rect>"#,
                margin + column as f64 * cell,
                margin + row as f64 * cell,
                shade(level),
                bytes_text(bytes as f64)
            );
        }
    }
    for (index, pair) in order.windows(2).enumerate() {
        if nodes[pair[0]] != nodes[pair[1]] {
            let at = margin + (index + 1) as f64 * cell;
            let _ = write!(
                svg,
                r##"<line x1="{at:.1}" y1="{margin}" x2="{at:.1}" y2="{:.1}" stroke="#d33" stroke-width="1.5"/><line x1="{margin}" y1="{at:.1}" x2="{:.1}" y2="{at:.1}" stroke="#d33" stroke-width="1.5"/>"##,
                margin + side,
                margin + side
            );
        }
    }
    if n <= 32 {
        for (index, &rank) in order.iter().enumerate() {
            let middle = margin + (index as f64 + 0.5) * cell;
            let _ = write!(
                svg,
                r#"<text x="{middle:.1}" y="{:.1}" font-size="10" text-anchor="middle">{rank}</text><text x="{:.1}" y="{:.1}" font-size="10" text-anchor="end">{rank}</text>"#,
                margin - 6.0,
                margin - 4.0,
                middle + 3.0
            );
        }
    }
    let _ = write!(svg, "</svg><p>Darkest cell: {}; the scale is logarithmic (hover a cell for its bytes).</p>", bytes_text(max));
    svg
}

/// One part of a stacked bar: its value, colour and name.
type Part = (f64, &'static str, &'static str);
/// A labelled row of stacked parts.
type BarRow = (String, Vec<Part>);

/// Horizontal bars, one row per label, each row the stacked `parts` (value, colour, name).
fn stacked_bars(id: &str, rows: &[BarRow], unit: &dyn Fn(f64) -> String) -> String {
    let width = 520.0;
    // Room for the longest label, at about 6 pixels a character of the 11-pixel font.
    let label = rows.iter().map(|(name, _)| name.chars().count()).max().unwrap_or(0) as f64 * 6.2 + 12.0;
    let row_height = 18.0;
    let max = rows.iter().map(|(_, parts)| parts.iter().map(|part| part.0).sum::<f64>()).fold(0.0, f64::max).max(f64::MIN_POSITIVE);
    let height = row_height * rows.len() as f64 + 10.0;
    let mut svg = format!(r#"<svg class="plot" id="{id}" xmlns="http://www.w3.org/2000/svg" width="{w}" height="{height}">"#, w = label + width + 90.0);
    for (index, (name, parts)) in rows.iter().enumerate() {
        let y = 5.0 + index as f64 * row_height;
        let _ = write!(svg, r#"<text x="{:.1}" y="{:.1}" font-size="11" text-anchor="end">{}</text>"#, label - 6.0, y + 12.0, escape(name));
        let mut x = label;
        for (value, colour, part) in parts {
            let w = width * value / max;
            let _ = write!(svg, r#"<rect x="{x:.1}" y="{y:.1}" width="{w:.1}" height="{:.1}" fill="{colour}"><title>{}: {}</title></rect>"#, row_height - 3.0, escape(part), unit(*value));
            x += w;
        }
        let total: f64 = parts.iter().map(|part| part.0).sum();
        let _ = write!(svg, r#"<text x="{:.1}" y="{:.1}" font-size="10">{}</text>"#, x + 4.0, y + 12.0, unit(total));
    }
    svg + "</svg>"
}

/// Lines of (x, y) points sharing axes, with a legend.
fn line_plot(id: &str, series: &[(String, Vec<(f64, f64)>)], x_unit: &str, y_unit: &str) -> String {
    let (width, height, margin) = (560.0, 200.0, 50.0);
    let x_max = series.iter().flat_map(|(_, points)| points.iter().map(|p| p.0)).fold(0.0, f64::max).max(f64::MIN_POSITIVE);
    let y_max = series.iter().flat_map(|(_, points)| points.iter().map(|p| p.1)).fold(0.0, f64::max).max(f64::MIN_POSITIVE);
    let colours = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b"];
    let mut svg = format!(r#"<svg class="plot" id="{id}" xmlns="http://www.w3.org/2000/svg" width="{}" height="{}">"#, width + margin + 160.0, height + margin);
    let _ = write!(svg, r##"<line x1="{margin}" y1="{height}" x2="{:.1}" y2="{height}" stroke="#444"/><line x1="{margin}" y1="0" x2="{margin}" y2="{height}" stroke="#444"/>"##, margin + width);
    let _ = write!(
        svg,
        r#"<text x="{margin}" y="{:.1}" font-size="10">0</text><text x="{:.1}" y="{:.1}" font-size="10" text-anchor="end">{x_max:.2} {x_unit}</text>"#,
        height + 14.0,
        margin + width,
        height + 14.0
    );
    let _ = write!(svg, r#"<text x="{:.1}" y="10" font-size="10" text-anchor="end">{}</text>"#, margin - 4.0, escape(&format!("{y_max:.1} {y_unit}")));
    for (index, (name, points)) in series.iter().enumerate() {
        let colour = colours[index % colours.len()];
        let path: Vec<String> = points.iter().map(|(x, y)| format!("{:.1},{:.1}", margin + width * x / x_max, height - height * y / y_max)).collect();
        let _ = write!(svg, r#"<polyline fill="none" stroke="{colour}" stroke-width="1.5" points="{}"/>"#, path.join(" "));
        let _ = write!(
            svg,
            r#"<rect x="{:.1}" y="{:.1}" width="10" height="10" fill="{colour}"/><text x="{:.1}" y="{:.1}" font-size="11">{}</text>"#,
            margin + width + 10.0,
            10.0 + 16.0 * index as f64,
            margin + width + 24.0,
            19.0 + 16.0 * index as f64,
            escape(name)
        );
    }
    svg + "</svg>"
}

fn seconds(value: f64) -> String {
    format!("{value:.3} s")
}

/// The whole page.
pub fn page(profile: &Profile) -> String {
    let mut body = String::new();
    let _ = write!(body, "<h1>Braid job profile</h1><p>{} of {} rank(s) on {} node(s); {}.</p>", profile.ranks.len(), profile.size, profile.nodes.len(), escape(&profile.library));
    if !profile.missing_ranks.is_empty() {
        let _ = write!(body, r#"<p class="warning">Rank(s) {} left no profile: they did not reach MPI_Finalize. Their rows are empty.</p>"#, rank_list(&profile.missing_ranks));
    }
    let _ = write!(body, r#"<p class="advice"><b>Advice:</b> {}</p>"#, escape(&super::advice::advice(profile)));

    let source = if profile.matrix_source == "engine" { "every message the engine carried, the collectives' own included" } else { "the point-to-point calls' messages" };
    let _ = write!(body, "<h2>Who sends to whom</h2><p>Bytes from each rank (row) to each rank (column): {source}. Ranks are grouped by node; red lines separate nodes.</p>{}", heat_map(profile));

    let rows: Vec<BarRow> = profile
        .ranks
        .iter()
        .map(|rank| {
            let blocked = rank.blocked_time.unwrap_or(0.0).min(rank.mpi_time);
            let parts =
                vec![((rank.wall_time - rank.mpi_time).max(0.0), "#7fbf7b", "computing"), (rank.mpi_time - blocked, "#fdb863", "inside MPI"), (blocked, "#b2abd2", "waiting (asleep or yielding)")];
            (format!("rank {} ({})", rank.rank, rank.node), parts)
        })
        .collect();
    let _ = write!(body, "<h2>Time per rank</h2><p>Green: computing; orange: inside MPI; purple: of that, waiting asleep or yielding its core.</p>{}", stacked_bars("time", &rows, &seconds));

    if profile.phases.len() > 1 {
        body += r#"<h2>Phases</h2><p>Marked by the program with MPI_Pcontrol(1, "name") and MPI_Pcontrol(-1, "name"); "main" is the rest.</p><table id="phases"><tr><th>phase</th><th>longest time on a rank</th><th>inside MPI (all ranks)</th><th>bytes sent</th></tr>"#;
        for phase in &profile.phases {
            let bytes: u64 = phase.bytes.iter().flatten().sum();
            let _ = write!(body, "<tr><td>{}</td><td>{:.4} s</td><td>{:.4} s</td><td>{}</td></tr>", escape(&phase.name), phase.wall_time, phase.mpi_time.iter().sum::<f64>(), bytes_text(bytes as f64));
        }
        body += "</table>";
    }

    let mpi_total: f64 = profile.ranks.iter().map(|rank| rank.mpi_time).sum();
    let _ = write!(body, r#"<h2>MPI functions</h2><table id="functions"><tr><th>function</th><th>time (all ranks)</th><th>share of MPI time</th><th>calls</th><th>bytes</th></tr>"#);
    for (name, calls, time, bytes) in top_functions(profile).iter().take(15) {
        let _ = write!(body, "<tr><td>{name}</td><td>{time:.4} s</td><td>{:.1}%</td><td>{calls}</td><td>{}</td></tr>", percent(*time, mpi_total), bytes_text(*bytes as f64));
    }
    body += "</table>";

    let mut histogram = vec![0u64; SIZE_BUCKETS];
    for entry in &profile.functions {
        for (total, count) in histogram.iter_mut().zip(&entry.stats.sizes) {
            *total += count;
        }
    }
    let buckets: Vec<BarRow> = histogram
        .iter()
        .enumerate()
        .filter(|(_, &count)| count > 0)
        .map(|(bucket, &count)| {
            let label = if bucket == 0 { "0 B".to_string() } else { format!("{} – {}", bytes_text((1u128 << (bucket - 1)) as f64), bytes_text(((1u128 << bucket) - 1) as f64)) };
            (label, vec![(count as f64, "#5e81ac", "calls")])
        })
        .collect();
    let _ = write!(body, "<h2>Message sizes</h2><p>Calls by the bytes they moved (power-of-two buckets).</p>{}", stacked_bars("sizes", &buckets, &|value| format!("{value:.0}")));

    let per_node_bytes = intra_inter_per_node(profile);
    let per_node: Vec<BarRow> = profile
        .nodes
        .iter()
        .zip(&per_node_bytes)
        .map(|(node, &(intra, inter))| (node.clone(), vec![(intra as f64, "#4c9a2a", "within the node"), (inter as f64, "#c0392b", "to other nodes")]))
        .collect();
    let (intra, inter) = intra_inter(profile);
    let _ = write!(
        body,
        "<h2>Within and across nodes</h2><p>Bytes each node's ranks sent: green within the node, red to other nodes ({:.1}% across in all).</p>{}",
        percent(inter as f64, (intra + inter) as f64),
        stacked_bars("nodes", &per_node, &|value| bytes_text(value))
    );

    if !profile.rails.is_empty() {
        body += "<h2>Rails</h2><p>What each node's ranks sent on each rail over time (rate per bin of the timeline).</p>";
        for node in &profile.rails {
            let series: Vec<(String, Vec<(f64, f64)>)> = node
                .rails
                .iter()
                .zip(&node.timeline)
                .enumerate()
                .map(|(rail, (name, bins))| {
                    let points = bins.iter().enumerate().map(|(bin, &bytes)| (bin as f64 * node.bin, bytes as f64 / node.bin / 1e6)).collect();
                    (format!("{name}: {} by {} rank(s)", bytes_text(node.bytes_sent[rail] as f64), node.ranks_using[rail]), points)
                })
                .collect();
            let _ = write!(body, "<h3>{}</h3>{}", escape(&node.node), line_plot(&format!("rails-{}", escape(&node.node)), &series, "s", "MB/s"));
        }
    }
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Braid job profile</title><style>body{{font-family:sans-serif;margin:2em;max-width:1000px}}table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:2px 8px;text-align:right}}td:first-child{{text-align:left}}.warning{{color:#b00}}.plot{{display:block;margin:1em 0}}</style></head><body>{body}</body></html>\n"
    )
}
