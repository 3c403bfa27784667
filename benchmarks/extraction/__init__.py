"""Extracted memories measured on LoCoMo: a scripted model answering with the annotators'
observations stands in for a good LLM, and the benchmark (``python -m benchmarks.extraction``)
measures what the extraction pipeline keeps of them and what it adds to search."""
