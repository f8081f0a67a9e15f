//! bench/osu_coll.sh's medians (`ranks,bench,bytes,braid,openmpi,mpich`, one point per line, an
//! empty field where a library has no figure): `osu-coll.svg`, Braid's time over each peer's at
//! every point, on a log scale around 1 (under the line: Braid is faster).

use std::error::Error;
use std::path::Path;

use plotters::prelude::*;

use crate::{colour, human_size, HEIGHT, WIDTH};

pub const HEADER: &str = "ranks,bench,bytes,braid,openmpi,mpich";

/// One point's medians (us), per library.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    pub ranks: u32,
    pub bench: String,
    pub bytes: u64,
    pub braid: Option<f64>,
    pub peers: [(&'static str, Option<f64>); 2],
}

impl Point {
    fn label(&self) -> String {
        match self.bench.as_str() {
            "barrier" => format!("{} barrier", self.ranks),
            bench => format!("{} {bench} {}", self.ranks, human_size(self.bytes)),
        }
    }
}

pub fn parse(text: &str) -> Result<Vec<Point>, String> {
    let number = |field: &str| -> Result<Option<f64>, String> {
        match field {
            "" => Ok(None),
            text => text.parse::<f64>().map(Some).map_err(|_| format!("{text:?} is not a time")),
        }
    };
    let mut points = Vec::new();
    for (fields, bad) in crate::rows(text, HEADER, 6)? {
        points.push(Point {
            ranks: fields[0].parse().map_err(|_| bad("ranks is not a number"))?,
            bench: fields[1].to_string(),
            bytes: fields[2].parse().map_err(|_| bad("bytes is not a number"))?,
            braid: number(fields[3]).map_err(|e| bad(&e))?,
            peers: [("openmpi", number(fields[4]).map_err(|e| bad(&e))?), ("mpich", number(fields[5]).map_err(|e| bad(&e))?)],
        });
    }
    Ok(points)
}

/// Braid's time over `peer`'s at each point that has both.
fn ratios(points: &[Point], peer: usize) -> Vec<(usize, f64)> {
    points.iter().enumerate().filter_map(|(index, point)| Some((index, point.braid? / point.peers[peer].1.filter(|time| *time > 0.0)?))).collect()
}

/// Draws `osu-coll.svg` into `out_dir`; returns its path, or none without any ratio to draw.
pub fn draw(points: &[Point], out_dir: &Path) -> Result<Vec<String>, Box<dyn Error>> {
    let series: Vec<(&str, Vec<(usize, f64)>)> = (0..2).map(|peer| (points.first().map_or("", |p| p.peers[peer].0), ratios(points, peer))).filter(|(_, ratios)| !ratios.is_empty()).collect();
    if series.is_empty() {
        return Ok(Vec::new());
    }
    std::fs::create_dir_all(out_dir)?;
    let path = out_dir.join("osu-coll.svg");
    let all = series.iter().flat_map(|(_, ratios)| ratios.iter().map(|r| r.1));
    let (low, high) = all.fold((1.0f64, 1.0f64), |(low, high), ratio| (low.min(ratio), high.max(ratio)));
    let root = SVGBackend::new(&path, (WIDTH, HEIGHT + 80)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption("OSU 7.4 collectives on one node: Braid's time over the peer's (under 1: Braid faster)", ("sans-serif", 20))
        .margin(16)
        .x_label_area_size(120)
        .y_label_area_size(60)
        .build_cartesian_2d(-0.5..points.len() as f64 - 0.5, (low / 1.5..high * 1.5).log_scale())?;
    let labels: Vec<String> = points.iter().map(Point::label).collect();
    chart
        .configure_mesh()
        .x_labels(points.len())
        .x_label_formatter(&|x| labels.get(x.round() as usize).filter(|_| (x - x.round()).abs() < 1e-6).cloned().unwrap_or_default())
        .x_label_style(("sans-serif", 12).into_font().transform(FontTransform::Rotate90))
        .y_desc("Braid / peer (log scale)")
        .draw()?;
    chart.draw_series(LineSeries::new([(-0.5, 1.0), (points.len() as f64 - 0.5, 1.0)], BLACK.stroke_width(1)))?;
    for (index, (peer, ratios)) in series.iter().enumerate() {
        let style = colour(index + 1);
        chart
            .draw_series(ratios.iter().map(|&(x, ratio)| Circle::new((x as f64, ratio), 5, style.filled())))?
            .label(format!("braid / {peer}"))
            .legend(move |(x, y)| Circle::new((x + 10, y), 5, style.filled()));
    }
    chart.configure_series_labels().background_style(WHITE.mix(0.85)).border_style(BLACK).position(SeriesLabelPosition::UpperLeft).draw()?;
    root.present()?;
    Ok(vec![path.display().to_string()])
}

#[cfg(test)]
mod tests {
    use super::*;

    const CSV: &str = "ranks,bench,bytes,braid,openmpi,mpich
2,barrier,8,0.31,0.21,0.72
2,bcast,65536,3.43,7.26,
4,alltoall,8,5.79,,4925.6
";

    #[test]
    fn points_parse_with_missing_figures_and_draw_the_ratios() {
        let points = parse(CSV).unwrap();
        assert_eq!(points.len(), 3);
        assert_eq!((points[1].peers[1].1, points[2].peers[0].1), (None, None));
        assert_eq!(ratios(&points, 0).len(), 2);
        assert!((ratios(&points, 0)[1].1 - 3.43 / 7.26).abs() < 1e-9);
        assert_eq!((points[0].label(), points[1].label()), ("2 barrier".to_string(), "2 bcast 64K".to_string()));
        let dir = std::env::temp_dir().join(format!("braid-report-osu-{}", std::process::id()));
        let written = draw(&points, &dir).unwrap();
        let svg = std::fs::read_to_string(dir.join("osu-coll.svg")).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(written.len(), 1);
        assert!(svg.contains("braid / openmpi") && svg.contains("braid / mpich") && svg.contains("2 bcast 64K"), "{svg}");
        assert!(parse("ranks,bench,bytes,braid,openmpi,mpich\n2,bcast,8,fast,1,1\n").unwrap_err().contains("line 2"));
    }
}
