package pretrain

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/layers"
)

// BERTPreTrainingData resumes where its state says, into a later epoch.
func TestPreTrainingDataResume(t *testing.T) {
	d := synthetic(12, 30)
	cfg := DefaultBERTPairs()
	cfg.MaxSeqLength, cfg.MaxPredictions, cfg.DynamicMasking = 32, 5, true
	sp := testSpecials(5000)
	tr, err := MakeBERTPairs(d, sp, cfg, 1)
	require.NoError(t, err)
	va, err := MakeBERTPairs(synthetic(4, 60), sp, cfg, 2)
	require.NoError(t, err)
	newData := func() *BERTPreTrainingData {
		data, err := NewBERTPreTrainingData(tr, va, sp, cfg, 8, 2, 9)
		require.NoError(t, err)
		return data
	}
	a := newData()
	steps := tr.Len()/8 + 3 // into the second epoch
	for range steps {
		_, err := a.Next()
		require.NoError(t, err)
	}
	require.Equal(t, 1, a.Epoch())
	st, err := a.State()
	require.NoError(t, err)
	want, err := a.Next()
	require.NoError(t, err)
	b := newData()
	require.NoError(t, b.Restore(st))
	got, err := b.Next()
	require.NoError(t, err)
	require.Equal(t, want, got)
	require.Error(t, b.Restore([]byte(`{"epoch":0,"pos":100000}`)))

	ev, err := a.Eval()
	require.NoError(t, err)
	require.Len(t, ev, 2)
	pb := ev[0].(*BERTPreTrainingBatch)
	require.Len(t, pb.IDs, 8*32)
	require.Len(t, pb.Positions, 8*5)
	require.Equal(t, pb.n, pb.Targets())
	for i, l := range pb.Labels {
		if l != layers.IgnoreIndex {
			require.Equal(t, l, int(va.toks[va.off[pb.Positions[i]/32]+pb.Positions[i]%32]))
		}
	}
}
