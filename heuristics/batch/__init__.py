"""Hand-written provisioners of the batch-queue family (seed 004), the submit-or-wait protocol they
and the learned ones implement, and the evaluation loop they share: :mod:`.rules`."""
