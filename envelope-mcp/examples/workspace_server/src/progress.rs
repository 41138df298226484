//! Progress through a long walk.

use envelope_core::ToolContext;

/// Long tools report progress after every this many files.
const PROGRESS_EVERY: usize = 100;

/// Reports progress through a long walk: once when the total is known, every
/// [`PROGRESS_EVERY`] files, and at the end.
pub(crate) struct Progress<'a> {
    ctx: &'a ToolContext,
    total: usize,
    noun: &'static str,
}

impl<'a> Progress<'a> {
    pub(crate) fn start(ctx: &'a ToolContext, total: usize, noun: &'static str) -> Self {
        ctx.report_progress(
            0.0,
            Some(total as f64),
            Some(&format!("found {total} {noun}")),
        );
        Progress { ctx, total, noun }
    }

    pub(crate) fn step(&self, done: usize) {
        if done.is_multiple_of(PROGRESS_EVERY) && done < self.total {
            self.report(done);
        }
    }

    pub(crate) fn finish(&self) {
        // Progress must increase from one notification to the next; with nothing to do, the
        // first report already said all there is.
        if self.total > 0 {
            self.report(self.total);
        }
    }

    fn report(&self, done: usize) {
        let message = format!("{done} of {} {}", self.total, self.noun);
        self.ctx
            .report_progress(done as f64, Some(self.total as f64), Some(&message));
    }
}
