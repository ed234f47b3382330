//! Reading the recordings behind a fault list's `replay` faults, once the
//! list is parsed, and what the run should warn about them.

use std::sync::Arc;

use super::spec::{Fault, FaultKind};
use crate::schema::units::Dur;
use crate::schema::{LoadError, SchemaError, Segment};
use crate::trace::{Model, Trace};

/// Reads the recording of every `replay` fault in `faults` (the list at
/// `key` of `file`, whose text is `text`), relative to the directory of
/// `file`, and sets each replay's window to the recording's length unless
/// `for` gave one. A recording that cannot be read is an error at the
/// fault's `replay.file`; a bad line is an error at its line in the
/// recording.
pub fn load_recordings(
    faults: &mut [Fault],
    file: &str,
    text: &str,
    key: &str,
) -> Result<(), LoadError> {
    for (i, fault) in faults.iter_mut().enumerate() {
        let FaultKind::Replay(replay) = &mut fault.kind else {
            continue;
        };
        let at = [
            Segment::Key(key.to_string()),
            Segment::Index(i),
            Segment::Key("replay".to_string()),
            Segment::Key("file".to_string()),
        ];
        let fields = &replay.fields;
        let trace = Trace::read_named(file, text, &at, &fields.file, fields.format)?;
        let model = Model::new(
            &trace,
            replay.fields.bucket.get(),
            replay.fields.cold_after.map(Dur::get),
        )
        .ok_or_else(|| {
            let message = format!("{}: no request in it reached the dependency", trace.file);
            let at = crate::trace::file_key(text, &at);
            LoadError::from(SchemaError::at(file, text, at, message))
        })?;
        if fault.window.length.is_none() && fault.window.pattern.is_none() {
            fault.window.length = Some(model.span());
        }
        replay.model = Some(Arc::new(model));
    }
    Ok(())
}

/// What the user should know about the recordings behind `faults`: one
/// line per recording with gaps, naming the first few.
pub fn gap_warnings(faults: &[Fault]) -> Vec<String> {
    const SHOWN: usize = 5;
    let mut out = Vec::new();
    for fault in faults {
        let FaultKind::Replay(replay) = &fault.kind else {
            continue;
        };
        let Some(model) = &replay.model else { continue };
        let gaps = model.gaps();
        if gaps.is_empty() {
            continue;
        }
        let width = replay.fields.bucket.get();
        let empty: u128 = gaps
            .iter()
            .map(|g| (g.to - g.from).as_nanos() / width.as_nanos())
            .sum();
        let total = model.span().as_nanos() / width.as_nanos();
        let mut spans: Vec<String> = gaps
            .iter()
            .take(SHOWN)
            .map(|g| format!("{}s-{}s", g.from.as_secs_f64(), g.to.as_secs_f64()))
            .collect();
        if gaps.len() > SHOWN {
            spans.push(format!("{} more", gaps.len() - SHOWN));
        }
        out.push(format!(
            "fault {}: {} records no request in {empty} of its {total} buckets ({}): each repeats the last bucket with requests",
            fault.name,
            replay.fields.file,
            spans.join(", "),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::Duration;
    use crate::fault::FaultFile;

    /// Loads `yaml` as a fault file beside a recording `trace.log` holding
    /// `trace` (NGINX format).
    fn load(yaml: &str, trace: &str) -> Result<Vec<Fault>, String> {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("trace.log"), trace).unwrap();
        let file = dir.path().join("f.yaml").display().to_string();
        let mut faults: FaultFile =
            crate::schema::from_yaml_str(&file, yaml).map_err(|e| e.to_string())?;
        load_recordings(&mut faults.faults, &file, yaml, "faults").map_err(|e| e.to_string())?;
        Ok(faults.faults)
    }

    /// One request a second for `seconds` seconds, each second listed in
    /// `silent` left out.
    fn trace(seconds: u64, silent: &[u64]) -> String {
        (0..seconds)
            .filter(|s| !silent.contains(s))
            .map(|s| format!("{}.100 \"GET / HTTP/1.1\" 200 0.000\n", 1_000 + s))
            .collect()
    }

    #[test]
    fn the_window_lasts_as_long_as_the_recording_unless_for_says_otherwise() {
        let faults = load(
            "faults:\n  - { name: a, replay: trace.log }\n  - { name: b, replay: trace.log, for: 2s }\n  - { name: c, replay: trace.log, pattern: { down: 1s, up: 1s } }\n",
            &trace(5, &[]),
        )
        .unwrap();
        assert_eq!(faults[0].window.length, Some(Duration::from_secs(5)));
        assert_eq!(faults[1].window.length, Some(Duration::from_secs(2)));
        assert_eq!(
            faults[2].window.length, None,
            "a pattern keeps its own rhythm"
        );
    }

    #[test]
    fn a_bucket_of_at_least_1ms_is_accepted_and_0s_refused() {
        assert!(
            load(
                "faults: [ { replay: { file: trace.log, bucket: 1ms } } ]\n",
                &trace(2, &[])
            )
            .is_ok()
        );
        let err = load(
            "faults: [ { replay: { file: trace.log, bucket: 0s } } ]\n",
            &trace(2, &[]),
        )
        .unwrap_err();
        assert!(err.contains("bucket: must be at least 1ms"), "{err}");
    }

    #[test]
    fn gap_warnings_name_five_gaps_then_count_the_rest() {
        let five = load(
            "faults: [ { name: r, replay: trace.log } ]\n",
            &trace(12, &[1, 3, 5, 7, 9]),
        )
        .unwrap();
        let warning = &gap_warnings(&five)[0];
        assert!(
            warning.contains(
                "records no request in 5 of its 12 buckets (1s-2s, 3s-4s, 5s-6s, 7s-8s, 9s-10s)"
            ),
            "{warning}"
        );
        let six = load(
            "faults: [ { name: r, replay: trace.log } ]\n",
            &trace(13, &[1, 3, 5, 7, 9, 11]),
        )
        .unwrap();
        let warning = &gap_warnings(&six)[0];
        assert!(warning.contains("9s-10s, 1 more)"), "{warning}");
        let none = load(
            "faults: [ { name: r, replay: trace.log } ]\n",
            &trace(3, &[]),
        )
        .unwrap();
        assert!(gap_warnings(&none).is_empty());
    }

    #[test]
    fn debug_output_says_whether_the_recording_was_read_not_its_lines() {
        let faults = load("faults: [ { replay: trace.log } ]\n", &trace(3, &[])).unwrap();
        let FaultKind::Replay(replay) = &faults[0].kind else {
            panic!("a replay");
        };
        let shown = format!("{replay:?}");
        assert!(
            shown.contains("read: true") && shown.contains("trace.log"),
            "{shown}"
        );
        assert!(!shown.contains("Outcome"), "{shown}");
    }
}
