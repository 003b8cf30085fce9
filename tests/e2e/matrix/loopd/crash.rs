//! Crashes and outages: loopd killed between taking a line and answering it, the
//! homeserver stopped and started again, a revoked token.
