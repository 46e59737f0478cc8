package models

// LoadReport says how a checkpoint was fitted to a model, the one report
// of every family's Load functions: the checkpoint keys it dropped
// (Dropped, sorted; a head the model does not have, or the pooler an older
// token-classification file carries) and the parameters it created, left
// at their initial values (Created, in the model's order); and, when the
// checkpoint was read at another image size, how its position embeddings
// were resampled (Resampled, "" otherwise); and whether the model's
// classification head is new (NewHead: built for WithLabels' labels, not
// the checkpoint's, so its parameters are among Created and need
// training). The zero value is an exact fit.
type LoadReport struct {
	Dropped, Created []string
	Resampled        string
	NewHead          bool
}

// Exact reports whether the checkpoint fitted the model as it was: nothing
// dropped, created or resampled, and no new head.
func (r LoadReport) Exact() bool {
	return len(r.Dropped) == 0 && len(r.Created) == 0 && r.Resampled == "" && !r.NewHead
}
