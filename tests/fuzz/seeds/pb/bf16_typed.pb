*şŒÀB
bf16_typed