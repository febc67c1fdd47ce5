"""Semantic change: which words changed meaning between two corpora or periods, read from two usage indexes
(`spacy_elmo.usages`), with the evidence a researcher reads.

- measures.py: APD, PRT, the energy distance and the cluster JSD over each word's usages;
- verdict.py: "changed", against control words drawn from the same corpora (the corpora's own drift as the null);
- senses.py: sense clusters, intervals, the permutation test, the evidence behind a score;
- sense_input.py, substitutes.py, sense_names.py: what the senses are clustered from and named by;
- gold.py, wug.py: people's change and WUG-format datasets;
- run.py: `spacy-elmo change` as a function; report.py: the page a person opens.
"""
