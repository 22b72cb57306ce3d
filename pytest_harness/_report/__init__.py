"""What the harness reports (tribunal runs, sampled tests, calibrations...) and how it is drawn."""
