//! TCB statuses (Intel "PCS API v4" `tcbStatus` values, and the TD relaunch statuses Intel's QVL derives for
//! TDX 1.5 quotes), and how Intel combines them.

use core::fmt;
use serde::{Deserialize, Serialize};

/// A TCB status.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum TcbStatus {
    /// The platform is patched to the latest TCB.
    UpToDate,
    /// Up to date, but software mitigations (listed by the advisory IDs) are needed.
    SWHardeningNeeded,
    /// Up to date, but the platform configuration (e.g. BIOS settings) must change.
    ConfigurationNeeded,
    /// Both of the above.
    ConfigurationAndSWHardeningNeeded,
    /// The platform's TCB is outdated.
    OutOfDate,
    /// Outdated and in need of configuration.
    OutOfDateConfigurationNeeded,
    /// The TCB is revoked: the platform's keys must be considered compromised. Never accepted.
    Revoked,
    /// TDX 1.5: the TD was launched on an out-of-date TDX module, but the module now running (after a
    /// TD-preserving update) is not out of date; relaunching the TD brings it up to date.
    TDRelaunchAdvised,
    /// As [`TcbStatus::TDRelaunchAdvised`], with configuration needed.
    TDRelaunchAdvisedConfigurationNeeded,
}

impl TcbStatus {
    /// The status's name as Intel writes it.
    pub fn name(self) -> &'static str {
        match self {
            Self::UpToDate => "UpToDate",
            Self::SWHardeningNeeded => "SWHardeningNeeded",
            Self::ConfigurationNeeded => "ConfigurationNeeded",
            Self::ConfigurationAndSWHardeningNeeded => "ConfigurationAndSWHardeningNeeded",
            Self::OutOfDate => "OutOfDate",
            Self::OutOfDateConfigurationNeeded => "OutOfDateConfigurationNeeded",
            Self::Revoked => "Revoked",
            Self::TDRelaunchAdvised => "TDRelaunchAdvised",
            Self::TDRelaunchAdvisedConfigurationNeeded => "TDRelaunchAdvisedConfigurationNeeded",
        }
    }

    /// Combines the platform's status with a component's (the TDX module's or the QE's), as Intel's QVL
    /// does (`convergeTcbStatusWithQeTcbStatus`): only an out-of-date or revoked component changes it.
    pub fn converge(self, component: TcbStatus) -> TcbStatus {
        use TcbStatus::{
            ConfigurationAndSWHardeningNeeded, ConfigurationNeeded, OutOfDate, OutOfDateConfigurationNeeded, Revoked,
            SWHardeningNeeded, UpToDate,
        };
        match (component, self) {
            (Revoked, _) => Revoked,
            (OutOfDate, UpToDate | SWHardeningNeeded) => OutOfDate,
            (OutOfDate, ConfigurationNeeded | ConfigurationAndSWHardeningNeeded) => OutOfDateConfigurationNeeded,
            _ => self,
        }
    }

    /// Combines a TDX 1.5 quote's launch status (TEE_TCB_SVN) with its current one (TEE_TCB_SVN2), as
    /// Intel's QVL does: an out-of-date launch TCB whose current TCB is not out of date advises a relaunch.
    pub fn with_current(self, current: TcbStatus) -> TcbStatus {
        use TcbStatus::{
            ConfigurationAndSWHardeningNeeded, ConfigurationNeeded, OutOfDate, OutOfDateConfigurationNeeded,
            SWHardeningNeeded, TDRelaunchAdvised, TDRelaunchAdvisedConfigurationNeeded, UpToDate,
        };
        let config = |s| {
            matches!(
                s,
                ConfigurationNeeded
                    | ConfigurationAndSWHardeningNeeded
                    | OutOfDateConfigurationNeeded
                    | TDRelaunchAdvisedConfigurationNeeded
            )
        };
        match (self, current) {
            (
                OutOfDate | OutOfDateConfigurationNeeded,
                UpToDate | SWHardeningNeeded | ConfigurationNeeded | ConfigurationAndSWHardeningNeeded,
            ) => {
                if config(self) || config(current) {
                    TDRelaunchAdvisedConfigurationNeeded
                } else {
                    TDRelaunchAdvised
                }
            }
            _ => self,
        }
    }
}

impl fmt::Display for TcbStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::TcbStatus::{
        ConfigurationNeeded, OutOfDate, OutOfDateConfigurationNeeded, Revoked, SWHardeningNeeded, TDRelaunchAdvised,
        TDRelaunchAdvisedConfigurationNeeded, UpToDate,
    };

    #[test]
    fn convergence() {
        assert_eq!(UpToDate.converge(UpToDate), UpToDate);
        assert_eq!(UpToDate.converge(OutOfDate), OutOfDate);
        assert_eq!(SWHardeningNeeded.converge(OutOfDate), OutOfDate);
        assert_eq!(ConfigurationNeeded.converge(OutOfDate), OutOfDateConfigurationNeeded);
        assert_eq!(ConfigurationNeeded.converge(UpToDate), ConfigurationNeeded);
        assert_eq!(OutOfDate.converge(Revoked), Revoked);
        assert_eq!(Revoked.converge(UpToDate), Revoked);
        assert_eq!(OutOfDate.with_current(UpToDate), TDRelaunchAdvised);
        assert_eq!(OutOfDate.with_current(ConfigurationNeeded), TDRelaunchAdvisedConfigurationNeeded);
        assert_eq!(OutOfDate.with_current(OutOfDate), OutOfDate);
        assert_eq!(UpToDate.with_current(UpToDate), UpToDate);
    }
}
