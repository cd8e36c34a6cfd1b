"""Development and test tooling that the product itself never imports: the exam-registry simulator and its
records, the demo-data seeder and the small PDF maker it uses."""
