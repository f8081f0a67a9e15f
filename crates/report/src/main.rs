//! `braid-report RESULTS.csv OUT_DIR`: draws the benchmark plots that docs/performance.md shows.
//!
//! Two kinds of CSV are understood, told apart by their header:
//! - bench/compare.sh's, one median per line: `impl,bench,ranks,size,median,unit,reps`. Written
//!   files: `latency.svg` and `bandwidth.svg` (log-log lines, one per implementation, 2 ranks) and
//!   `oversubscribed.svg` (bars for the ring, allreduce and waitcpu benchmarks, one panel each).
//! - bench/multirail.sh's: `rails,impl,variant,load,bench,size,value,unit`. Written files, per rail
//!   set: `multirail-<rails>-bandwidth.svg` and `multirail-<rails>-latency.svg`, one line per
//!   implementation and variant (unloaded runs), titled with the sum of the rails' iperf3 rates.
//! - bench/osu_coll.sh's medians: `osu-coll.svg` (see osu_coll.rs).

mod osu_coll;

use std::collections::BTreeSet;
use std::error::Error;
use std::path::Path;

use plotters::prelude::*;

/// One median of one benchmark point of one implementation.
#[derive(Debug, Clone, PartialEq)]
struct Sample {
    implementation: String,
    bench: String,
    ranks: u32,
    size: u64,
    median: f64,
    unit: String,
}

const HEADER: &str = "impl,bench,ranks,size,median,unit,reps";
const MULTIRAIL_HEADER: &str = "rails,impl,variant,load,bench,size,value,unit";
const WIDTH: u32 = 900;
const HEIGHT: u32 = 560;
const BAR_BENCHES: &[&str] = &["ring", "allreduce", "waitcpu"];

/// One CSV data row: its fields, and a maker of error messages naming the row.
type Row<'a, E> = (Vec<&'a str>, E);

/// The data rows of a CSV whose header is `header`; a row without `width` fields is an error.
fn rows<'a>(text: &'a str, header: &str, width: usize) -> Result<Vec<Row<'a, impl Fn(&str) -> String + 'a>>, String> {
    let mut rows = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line == header {
            continue;
        }
        let fields: Vec<&str> = line.split(',').collect();
        let bad = move |what: &str| format!("line {}: {what}: {line:?}", index + 1);
        if fields.len() != width {
            return Err(bad(&format!("expected {width} comma-separated fields")));
        }
        rows.push((fields, bad));
    }
    Ok(rows)
}

fn parse_results(text: &str) -> Result<Vec<Sample>, String> {
    let mut samples = Vec::new();
    for (fields, bad) in rows(text, HEADER, 7)? {
        samples.push(Sample {
            implementation: fields[0].to_string(),
            bench: fields[1].to_string(),
            ranks: fields[2].parse().map_err(|_| bad("ranks is not a number"))?,
            size: fields[3].parse().map_err(|_| bad("size is not a number"))?,
            median: fields[4].parse().map_err(|_| bad("median is not a number"))?,
            unit: fields[5].to_string(),
        });
    }
    Ok(samples)
}

/// Implementations in a stable order, Braid first so it always gets the same colour.
fn implementations(samples: &[Sample]) -> Vec<String> {
    let mut names: Vec<String> = samples.iter().map(|s| s.implementation.clone()).collect::<BTreeSet<_>>().into_iter().collect();
    names.sort_by_key(|name| (name != "braid", name.clone()));
    names
}

fn colour(index: usize) -> RGBColor {
    const PALETTE: [RGBColor; 8] =
        [RGBColor(200, 40, 40), RGBColor(40, 90, 200), RGBColor(40, 150, 60), RGBColor(150, 80, 180), RGBColor(220, 140, 20), RGBColor(20, 170, 190), RGBColor(120, 120, 120), RGBColor(240, 100, 170)];
    PALETTE[index % PALETTE.len()]
}

fn human_size(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{}M", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{}K", b >> 10),
        b => b.to_string(),
    }
}

/// How a panel's bar groups are told apart: what all groups share goes into the caption, what
/// differs labels each group (rank count, message size, or compute time for waitcpu).
fn group_labels(bench: &str, groups: &[(u32, u64)]) -> (String, Vec<String>) {
    let size_text = |size: u64| if bench == "waitcpu" { format!("{size} ms") } else { format!("{} B", human_size(size)) };
    let same_ranks = groups.windows(2).all(|pair| pair[0].0 == pair[1].0);
    let same_size = groups.windows(2).all(|pair| pair[0].1 == pair[1].1);
    let (ranks, size) = groups.first().copied().unwrap_or_default();
    match (same_ranks, same_size) {
        (true, true) => (format!("{ranks} ranks, {}", size_text(size)), vec![String::new(); groups.len()]),
        (true, false) => (format!("{ranks} ranks"), groups.iter().map(|g| size_text(g.1)).collect()),
        (false, true) => (size_text(size), groups.iter().map(|g| format!("{} ranks", g.0)).collect()),
        (false, false) => (String::new(), groups.iter().map(|g| format!("{} ranks, {}", g.0, size_text(g.1))).collect()),
    }
}

/// Log-log line chart of `bench` at 2 ranks against message size (size 0 cannot sit on a log axis).
fn line_chart(samples: &[Sample], bench: &str, title: &str, path: &Path) -> Result<bool, Box<dyn Error>> {
    let points: Vec<&Sample> = samples.iter().filter(|s| s.bench == bench && s.ranks == 2 && s.size > 0 && s.median > 0.0).collect();
    if points.is_empty() {
        return Ok(false);
    }
    let unit = points[0].unit.clone();
    let min_size = points.iter().map(|s| s.size).min().unwrap_or(1);
    let max_size = points.iter().map(|s| s.size).max().unwrap_or(2).max(min_size * 2);
    let min_value = points.iter().map(|s| s.median).fold(f64::INFINITY, f64::min);
    let max_value = points.iter().map(|s| s.median).fold(0.0, f64::max);

    let root = SVGBackend::new(path, (WIDTH, HEIGHT)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(title, ("sans-serif", 24))
        .margin(16)
        .x_label_area_size(44)
        .y_label_area_size(70)
        .build_cartesian_2d((min_size..max_size).log_scale().base(2.0), (min_value / 1.5..max_value * 1.5).log_scale())?;
    chart.configure_mesh().x_desc("message size (bytes)").y_desc(unit.as_str()).x_label_formatter(&|size| human_size(*size)).draw()?;
    for (index, name) in implementations(samples).iter().enumerate() {
        let mut series: Vec<(u64, f64)> = points.iter().filter(|s| &s.implementation == name).map(|s| (s.size, s.median)).collect();
        if series.is_empty() {
            continue;
        }
        series.sort_by_key(|point| point.0);
        let style = colour(index).stroke_width(2);
        chart.draw_series(LineSeries::new(series.iter().copied(), style))?.label(name.as_str()).legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], style));
        chart.draw_series(series.iter().map(|&(x, y)| Circle::new((x, y), 3, colour(index).filled())))?;
    }
    chart.configure_series_labels().background_style(WHITE.mix(0.85)).border_style(BLACK).position(SeriesLabelPosition::UpperLeft).draw()?;
    root.present()?;
    Ok(true)
}

/// One panel of grouped bars per benchmark: a group per (ranks, size) point, a bar per implementation.
fn bar_panels(samples: &[Sample], path: &Path) -> Result<bool, Box<dyn Error>> {
    let benches: Vec<&str> = BAR_BENCHES.iter().copied().filter(|bench| samples.iter().any(|s| s.bench == *bench)).collect();
    if benches.is_empty() {
        return Ok(false);
    }
    let names = implementations(samples);
    let root = SVGBackend::new(path, (WIDTH, HEIGHT)).into_drawing_area();
    root.fill(&WHITE)?;
    let (title_area, body) = root.split_vertically(40);
    title_area.titled("Oversubscribed and waiting ranks (lower is better)", ("sans-serif", 22))?;
    for (panel_index, (panel, bench)) in body.split_evenly((1, benches.len())).iter().zip(&benches).enumerate() {
        let rows: Vec<&Sample> = samples.iter().filter(|s| s.bench == *bench).collect();
        let groups: Vec<(u32, u64)> = rows.iter().map(|s| (s.ranks, s.size)).collect::<BTreeSet<_>>().into_iter().collect();
        let unit = rows[0].unit.clone();
        // Peers can differ by orders of magnitude when oversubscribed, so the value axis is logarithmic.
        // The headroom above the tallest bar keeps the legend off the bars.
        let tallest = rows.iter().map(|s| s.median).fold(0.0, f64::max).max(1e-3);
        let top = tallest * 20.0;
        let floor = rows.iter().map(|s| s.median).filter(|v| *v > 0.0).fold(tallest, f64::min) / 3.0;
        let (shared, labels) = group_labels(bench, &groups);
        let caption = if shared.is_empty() { format!("{bench} ({unit}, log scale)") } else { format!("{bench}, {shared} ({unit}, log scale)") };
        let impl_count = names.len();
        let slots = impl_count + 1;
        let mut chart = ChartBuilder::on(panel)
            .caption(caption, ("sans-serif", 16))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(56)
            .build_cartesian_2d(0.0..(groups.len() * slots) as f64, (floor..top).log_scale())?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(groups.len() * slots * 2)
            .x_label_formatter(&move |x| {
                let slot = x.round() as usize;
                let centre = slot % slots == impl_count.div_ceil(2) && (*x - slot as f64).abs() < 0.01;
                match labels.get(slot / slots) {
                    Some(label) if centre => label.clone(),
                    _ => String::new(),
                }
            })
            .y_desc(unit.as_str())
            .draw()?;
        for (index, name) in names.iter().enumerate() {
            let bars = groups.iter().enumerate().filter_map(|(group, point)| {
                let sample = rows.iter().find(|s| &s.implementation == name && (s.ranks, s.size) == *point)?;
                let left = (group * slots + index) as f64 + 0.6;
                Some(Rectangle::new([(left, floor), (left + 0.8, sample.median.max(floor))], colour(index).filled()))
            });
            let style = colour(index).filled();
            chart.draw_series(bars)?.label(name.as_str()).legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 12, y + 5)], style));
        }
        if panel_index == 0 {
            chart.configure_series_labels().background_style(WHITE.mix(0.85)).border_style(BLACK).position(SeriesLabelPosition::UpperRight).draw()?;
        }
    }
    root.present()?;
    Ok(true)
}

fn draw_all(samples: &[Sample], out_dir: &Path) -> Result<Vec<String>, Box<dyn Error>> {
    std::fs::create_dir_all(out_dir)?;
    let mut written = Vec::new();
    let charts: [(&str, &str, &str); 2] =
        [("latency", "latency.svg", "Ping-pong latency, 2 ranks (lower is better)"), ("bw", "bandwidth.svg", "Streaming bandwidth, window of 64, 2 ranks (higher is better)")];
    for (bench, file, title) in charts {
        let path = out_dir.join(file);
        if line_chart(samples, bench, title, &path)? {
            written.push(path.display().to_string());
        }
    }
    let path = out_dir.join("oversubscribed.svg");
    if bar_panels(samples, &path)? {
        written.push(path.display().to_string());
    }
    Ok(written)
}

/// bench/multirail.sh's rows as samples of one rail set: the implementation is `impl variant`
/// (unloaded runs only); also returns the sum of the rails' iperf3 rates in Mbit/s.
fn parse_multirail(text: &str) -> Result<Vec<(String, Vec<Sample>, f64)>, String> {
    let mut sets: Vec<(String, Vec<Sample>, f64)> = Vec::new();
    for (fields, bad) in rows(text, MULTIRAIL_HEADER, 8)? {
        let value: f64 = fields[6].parse().map_err(|_| bad("value is not a number"))?;
        let position = match sets.iter().position(|(rails, _, _)| rails == fields[0]) {
            Some(position) => position,
            None => {
                sets.push((fields[0].to_string(), Vec::new(), 0.0));
                sets.len() - 1
            }
        };
        let set = &mut sets[position];
        match (fields[1], fields[3], fields[4]) {
            ("iperf3", _, "rail_mbits") => set.2 += value,
            (_, "none", bench @ ("bw" | "latency")) => set.1.push(Sample {
                implementation: format!("{} {}", fields[1], fields[2]),
                bench: bench.to_string(),
                ranks: 2,
                size: fields[5].parse().map_err(|_| bad("size is not a number"))?,
                median: value,
                unit: fields[7].to_string(),
            }),
            _ => {}
        }
    }
    Ok(sets)
}

fn draw_multirail(sets: &[(String, Vec<Sample>, f64)], out_dir: &Path) -> Result<Vec<String>, Box<dyn Error>> {
    std::fs::create_dir_all(out_dir)?;
    let mut written = Vec::new();
    for (rails, samples, sum_mbits) in sets {
        let name: String = rails.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect();
        let sum_mbytes = sum_mbits / 8.0;
        let charts = [
            ("bw", "bandwidth", format!("Multirail bandwidth, rails {rails} (iperf3 sum {sum_mbytes:.0} MB/s; higher is better)")),
            ("latency", "latency", format!("Multirail latency, rails {rails} (lower is better)")),
        ];
        for (bench, file, title) in charts {
            let path = out_dir.join(format!("multirail-{name}-{file}.svg"));
            if line_chart(samples, bench, &title, &path)? {
                written.push(path.display().to_string());
            }
        }
    }
    Ok(written)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 3 || args[1].starts_with('-') {
        eprintln!("usage: braid-report RESULTS.csv OUT_DIR\n  CSV header: {HEADER}\n  writes latency.svg, bandwidth.svg, oversubscribed.svg");
        std::process::exit(2);
    }
    let out_dir = Path::new(&args[2]);
    let result = std::fs::read_to_string(&args[1]).map_err(|e| format!("cannot read {}: {e}", args[1]).into()).and_then(|text| {
        let header = text.lines().next().map(str::trim);
        if header == Some(MULTIRAIL_HEADER) {
            parse_multirail(&text).map_err(Box::<dyn Error>::from).and_then(|sets| draw_multirail(&sets, out_dir))
        } else if header == Some(osu_coll::HEADER) {
            osu_coll::parse(&text).map_err(Box::<dyn Error>::from).and_then(|points| osu_coll::draw(&points, out_dir))
        } else {
            parse_results(&text).map_err(Box::<dyn Error>::from).and_then(|samples| draw_all(&samples, out_dir))
        }
    });
    match result {
        Ok(written) if written.is_empty() => {
            eprintln!("braid-report: {} holds no latency, bw, ring, allreduce or waitcpu rows; nothing drawn", args[1]);
            std::process::exit(1);
        }
        Ok(written) => written.iter().for_each(|path| println!("wrote {path}")),
        Err(error) => {
            eprintln!("braid-report: {error}");
            std::process::exit(1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE_CSV: &str = "impl,bench,ranks,size,median,unit,reps
braid,latency,2,0,0.30,us,3
braid,latency,2,8,0.35,us,3
braid,latency,2,1024,0.60,us,3
mpich,latency,2,8,0.50,us,3
mpich,latency,2,1024,0.90,us,3
braid,bw,2,1024,3000,MB/s,3
mpich,bw,2,1024,2500,MB/s,3
braid,ring,4,8,1.5,us,3
mpich,ring,4,8,900,us,3
openmpi,waitcpu,2,50,100,%,3
braid,waitcpu,2,50,3,%,3
";

    const MULTIRAIL_CSV: &str = "rails,impl,variant,load,bench,size,value,unit
2gbit+1gbit,iperf3,rail0,none,rail_mbits,0,1900,Mbit/s
2gbit+1gbit,iperf3,rail1,none,rail_mbits,0,950,Mbit/s
2gbit+1gbit,braid,hetero,none,bw,65536,340,MB/s
2gbit+1gbit,braid,hetero,none,bw,1048576,350,MB/s
2gbit+1gbit,openmpi,default,none,bw,1048576,240,MB/s
2gbit+1gbit,braid,hetero,none,latency,8,9.5,us
2gbit+1gbit,braid,hetero,rail0,xfer_p99,1048576,7600,us
";

    #[test]
    fn multirail_rows_group_by_rail_set_and_draw() {
        let sets = parse_multirail(MULTIRAIL_CSV).unwrap();
        assert_eq!(sets.len(), 1);
        let (rails, samples, sum) = &sets[0];
        assert_eq!((rails.as_str(), *sum), ("2gbit+1gbit", 2850.0));
        assert_eq!(samples.len(), 4, "loaded xfer rows are not drawn: {samples:?}");
        assert_eq!(samples[2].implementation, "openmpi default");
        let dir = std::env::temp_dir().join(format!("braid-report-multirail-{}", std::process::id()));
        let written = draw_multirail(&sets, &dir).unwrap();
        assert_eq!(written.len(), 2);
        assert!(std::fs::read_to_string(dir.join("multirail-2gbit-1gbit-bandwidth.svg")).unwrap().contains("<svg"));
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(parse_multirail("rails,impl\nx,y\n").is_err());
    }

    #[test]
    fn parses_rows_and_skips_header() {
        let samples = parse_results(SAMPLE_CSV).unwrap();
        assert_eq!(samples.len(), 11);
        assert_eq!(samples[2], Sample { implementation: "braid".into(), bench: "latency".into(), ranks: 2, size: 1024, median: 0.60, unit: "us".into() });
    }

    #[test]
    fn rejects_malformed_lines_with_line_number() {
        let error = parse_results("braid,latency,2,8,fast,us,3").unwrap_err();
        assert!(error.contains("line 1") && error.contains("median"), "{error}");
        assert!(parse_results("braid,latency,2").is_err());
    }

    #[test]
    fn braid_comes_first_in_legend_order() {
        let samples = parse_results(SAMPLE_CSV).unwrap();
        assert_eq!(implementations(&samples), vec!["braid", "mpich", "openmpi"]);
    }

    #[test]
    fn sizes_print_with_binary_suffixes() {
        assert_eq!(human_size(512), "512");
        assert_eq!(human_size(4096), "4K");
        assert_eq!(human_size(16 << 20), "16M");
    }

    #[test]
    fn bar_groups_are_labelled_by_what_differs() {
        assert_eq!(group_labels("allreduce", &[(4, 4), (4, 1024)]), ("4 ranks".to_string(), vec!["4 B".to_string(), "1K B".to_string()]));
        assert_eq!(group_labels("ring", &[(2, 8), (4, 8)]), ("8 B".to_string(), vec!["2 ranks".to_string(), "4 ranks".to_string()]));
        assert_eq!(group_labels("waitcpu", &[(2, 50)]), ("2 ranks, 50 ms".to_string(), vec![String::new()]));
        assert_eq!(group_labels("ring", &[(2, 8), (4, 16)]).1, vec!["2 ranks, 8 B".to_string(), "4 ranks, 16 B".to_string()]);
    }

    #[test]
    fn draws_every_chart_with_every_implementation() {
        let out_dir = std::env::temp_dir().join(format!("braid-report-test-{}", std::process::id()));
        let samples = parse_results(SAMPLE_CSV).unwrap();
        let written = draw_all(&samples, &out_dir);
        let files: Vec<String> = ["latency.svg", "bandwidth.svg", "oversubscribed.svg"].iter().map(|f| std::fs::read_to_string(out_dir.join(f)).unwrap_or_default()).collect();
        std::fs::remove_dir_all(&out_dir).unwrap();
        assert_eq!(written.unwrap().len(), 3);
        let has_text = |svg: &str, text: &str| svg.lines().any(|line| line.trim() == text);
        assert!(files[0].starts_with("<svg") && has_text(&files[0], "braid") && has_text(&files[0], "mpich"));
        assert!(has_text(&files[1], "Streaming bandwidth, window of 64, 2 ranks (higher is better)"));
        assert!(has_text(&files[2], "ring, 4 ranks, 8 B (us, log scale)") && has_text(&files[2], "waitcpu, 2 ranks, 50 ms (%, log scale)") && has_text(&files[2], "openmpi"));
    }

    #[test]
    fn nothing_drawn_without_known_benchmarks() {
        let out_dir = std::env::temp_dir().join(format!("braid-report-empty-{}", std::process::id()));
        let samples = parse_results("braid,mr,2,8,1000000,msg/s,3").unwrap();
        let written = draw_all(&samples, &out_dir).unwrap();
        std::fs::remove_dir_all(&out_dir).unwrap();
        assert!(written.is_empty());
    }
}
