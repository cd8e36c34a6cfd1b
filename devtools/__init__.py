"""Development and test tooling that the product itself never imports: the exam-registry simulator and its
records, the demo-data seeder and the small PDF maker it uses."""


# The registry simulator's behaviours, here so `flask --help` can list them without loading the simulator.
MODES = ("normal", "slow", "error", "garbage", "redirect")
