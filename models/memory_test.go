package models_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/d73a19ff/zoo/models"
)

// CheckSizes names the first field outside its range.
func TestCheckSizes(t *testing.T) {
	require.NoError(t, models.CheckSizes("c", models.Size{Field: "a", V: 1, Max: 2}))
	err := models.CheckSizes("c", models.Size{Field: "a", V: 1, Max: 2}, models.Size{Field: "b", V: 3, Max: 2})
	assert.EqualError(t, err, "c: b 3 must be in [1, 2]")
}
