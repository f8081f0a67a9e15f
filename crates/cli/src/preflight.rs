//! What `braid run` checks in its environment before it starts a rank: the BRAID_* settings that
//! every rank inherits, and the job's time limit MPIEXEC_TIMEOUT.

use std::time::Duration;

/// The variable that limits a job's run time, in seconds, as with MPICH's and Open MPI's mpiexec.
pub const TIMEOUT_VARIABLE: &str = "MPIEXEC_TIMEOUT";

/// The launcher's exit status when the job ran past its time limit: MPICH's Hydra exits with 255.
pub const TIMED_OUT_STATUS: i32 = 255;

/// Checks the BRAID_* settings of `lookup` as a rank's MPI_Init will read them. A bad value is an
/// error (it states the accepted values or range); each BRAID_* name among `names` that Braid does
/// not know gives a warning.
pub fn check_settings<'a>(lookup: impl Fn(&str) -> Option<String>, names: impl IntoIterator<Item = &'a str>) -> Result<Vec<String>, String> {
    braid_config::Config::from_lookup(lookup).map_err(|error| error.to_string())?;
    Ok(braid_config::unknown_variables(names).iter().map(ToString::to_string).collect())
}

/// The job's time limit from the value of MPIEXEC_TIMEOUT: whole seconds; unset, empty or 0 means
/// no limit (as with Hydra and Open MPI).
pub fn job_timeout(value: Option<&str>) -> Result<Option<Duration>, String> {
    let Some(text) = value.map(str::trim).filter(|text| !text.is_empty()) else { return Ok(None) };
    match text.parse::<u64>() {
        Ok(0) => Ok(None),
        Ok(seconds) => Ok(Some(Duration::from_secs(seconds))),
        Err(_) => Err(format!("{TIMEOUT_VARIABLE}={text:?} is not valid: expected the job's time limit in whole seconds (0: no limit)")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_timeout_is_whole_seconds_and_zero_or_nothing_is_no_limit() {
        assert_eq!(job_timeout(None), Ok(None));
        assert_eq!(job_timeout(Some("")), Ok(None));
        assert_eq!(job_timeout(Some("0")), Ok(None));
        assert_eq!(job_timeout(Some(" 30 ")), Ok(Some(Duration::from_secs(30))));
        for bad in ["-1", "1.5", "10s", "abc"] {
            let error = job_timeout(Some(bad)).unwrap_err();
            assert!(error.starts_with(&format!("MPIEXEC_TIMEOUT={bad:?} is not valid")), "{error}");
            assert!(error.contains("whole seconds"), "{error}");
        }
    }

    #[test]
    fn bad_settings_are_errors_and_unknown_names_warnings() {
        let lookup = |value: &'static str| move |name: &str| (name == "BRAID_WAIT").then(|| value.to_string());
        assert_eq!(check_settings(lookup("poll"), ["BRAID_WAIT", "BRAID_LOCAL_RANK"]), Ok(vec![]));
        let error = check_settings(lookup("sometimes"), ["BRAID_WAIT"]).unwrap_err();
        assert!(error.contains("BRAID_WAIT=\"sometimes\"") && error.contains("one of auto, poll, block"), "{error}");
        let warnings = check_settings(lookup("poll"), ["BRAID_WAIT", "BRAID_WIAT"]).unwrap();
        assert_eq!(warnings, vec!["BRAID_WIAT is not a Braid setting (did you mean BRAID_WAIT?)".to_string()]);
    }
}
