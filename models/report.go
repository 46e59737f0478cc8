package models

// LoadReport says how a checkpoint was fitted to a model, for every family
// that loads across heads (bert, vit): the checkpoint keys it dropped
// (Dropped, sorted; a head the model does not have, or the pooler an older
// token-classification file carries) and the parameters it created, left
// at their initial values (Created, in the model's order); and, when the
// checkpoint was read at another image size, how its position embeddings
// were resampled (Resampled, "" otherwise). The zero value is an exact fit.
type LoadReport struct {
	Dropped, Created []string
	Resampled        string
}

// Exact reports whether the checkpoint fitted the model as it was: nothing
// dropped, created or resampled.
func (r LoadReport) Exact() bool {
	return len(r.Dropped) == 0 && len(r.Created) == 0 && r.Resampled == ""
}
