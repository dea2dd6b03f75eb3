"""Images made by the program itself: the demo dataset, handwritten-looking digits and the
generated shapes the tests and benchmarks train on."""
