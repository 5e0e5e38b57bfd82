"""What the model sees of the Hub (private): the tool, resource and prompt records and the
catalogue (``tools``), names fit for an LLM (``llm_names``), tool search (``search``), the
permission rules (``permissions``), result post-processing (``results``) and the Hub's own
tools (``own_tools``)."""
