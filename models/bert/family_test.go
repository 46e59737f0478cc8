package bert

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/models"
)

func TestStepBytes(t *testing.T) {
	m, err := New(testConfig())
	require.NoError(t, err)
	c, err := NewForSequenceClassification(m, []string{"a", "b"})
	require.NoError(t, err)
	var _ models.StepEstimator = c
	small, big := c.StepBytes(2, 8, false), c.StepBytes(2, 8, true)
	require.Positive(t, small)
	require.Greater(t, big, small)
	require.Equal(t, int64(math.MaxInt64), c.StepBytes(math.MaxInt32, math.MaxInt32, true))
}

// The family registers RoBERTa's model type, and describes a RoBERTa
// checkpoint by its name and head.
func TestRobertaFamily(t *testing.T) {
	f, err := models.ForModelType("roberta")
	require.NoError(t, err)
	require.Equal(t, "bert", f.Name)
	s, err := f.Describe("testdata/roberta/seq")
	require.NoError(t, err)
	require.Equal(t, "RoBERTa: 2 layers, 4 heads, 16 wide, 32 inner, 12 positions, vocabulary 24, 1 token types; RobertaForSequenceClassification, 3 labels", s)
}
